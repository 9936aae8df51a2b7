import numpy as np
import pytest
import tensorflow as tf

from common.encoder import EncoderConfig, build_encoder
from distributed_checks import assert_replicas_agree, replica_check
from fixtures import NLI_ROWS
from simcse_tf.config import SimcseConfig
from simcse_tf.data import read_sentences, read_triples
from simcse_tf.model import SimcseModel

SENTENCES = ["a man plays a guitar .", "two dogs run outside .", "a child eats an apple .", "stocks fell today .",
             "it rains in london .", "a cat sleeps on the mat ."]


def _model(dropout):
    encoder = build_encoder(EncoderConfig(spec="tiny", max_seq_len=16, dropout=dropout, seed=2))
    return SimcseModel(encoder, mode="unsup", use_mlp=True)


def test_without_dropout_the_views_are_identical_and_the_loss_is_minimal():
    model = _model(dropout=0.0)
    tokens = model.encoder.tokenizer(tf.constant(SENTENCES))
    v1 = model.embed_for_training(tokens, training=True).numpy()
    v2 = model.embed_for_training(tokens, training=True).numpy()
    np.testing.assert_array_equal(v1, v2)
    z = v1 / np.linalg.norm(v1, axis=1, keepdims=True)
    sim = z @ z.T
    assert (sim.argmax(axis=1) == np.arange(len(SENTENCES))).all()  # each view's positive is its best match
    loss = float(model.compute_losses({"sentences": tokens}, training=True)["total"])
    # Any other choice of positives (a shuffled pairing) costs more.
    perm = np.roll(np.arange(len(SENTENCES)), 1)
    logits = sim / 0.05
    shuffled = np.mean([-(logits[i, perm[i]] - np.log(np.exp(logits[i]).sum())) for i in range(len(SENTENCES))])
    identical = np.mean([-(logits[i, i] - np.log(np.exp(logits[i]).sum())) for i in range(len(SENTENCES))])
    assert loss == pytest.approx(identical, rel=1e-4) and loss < shuffled


def test_dropout_makes_the_views_differ():
    model = _model(dropout=0.1)
    tokens = model.encoder.tokenizer(tf.constant(SENTENCES))
    v1 = model.embed_for_training(tokens, training=True).numpy()
    v2 = model.embed_for_training(tokens, training=True).numpy()
    assert np.abs(v1 - v2).max() > 1e-4
    np.testing.assert_array_equal(model.embed_for_training(tokens, training=False).numpy(),
                                  model.embed_for_training(tokens, training=False).numpy())


def test_one_replica_equals_two_replicas():
    assert_replicas_agree(replica_check("simcse"))


def test_mode_defaults_are_the_papers():
    unsup = SimcseConfig(mode="unsup").with_mode_defaults()
    sup = SimcseConfig(mode="sup").with_mode_defaults()
    assert (unsup.batch_size, unsup.train_lr, unsup.max_seq_len, unsup.train_epochs) == (64, 3e-5, 32, 1)
    assert (sup.batch_size, sup.train_lr, sup.train_epochs) == (512, 5e-5, 3)
    assert SimcseConfig(mode="sup", batch_size=8).with_mode_defaults().batch_size == 8
    with pytest.raises(ValueError, match="simcse_mode"):
        SimcseConfig(mode="semi").with_mode_defaults()


def test_readers(tmp_path):
    import json

    txt = tmp_path / "sentences.txt"
    txt.write_text("first sentence .\n\nsecond sentence .\nfirst sentence .\n")
    jsonl = tmp_path / "nli.jsonl"
    jsonl.write_text("".join(json.dumps({"gold_label": g, "sentence1": a, "sentence2": b}) + "\n"
                             for a, b, g in NLI_ROWS))
    sentences = read_sentences([str(txt), str(jsonl)], str(tmp_path))
    assert sentences[:2] == ["first sentence .", "second sentence ."]
    gold = [(a, b) for a, b, g in NLI_ROWS if g != "-"]  # pairs without a gold label are dropped
    assert len(sentences) == 2 + len({a for a, _ in gold} | {b for _, b in gold})
    premises, entailed, contradicted = read_triples([str(jsonl)], str(tmp_path))
    assert premises == ["a man plays a guitar .", "two dogs run on grass ."]
    assert entailed == ["a person makes music .", "animals are outside ."]
    assert contradicted == ["nobody is playing .", "the dogs are asleep ."]
