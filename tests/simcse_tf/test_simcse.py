import numpy as np
import pytest
import tensorflow as tf

from common.models.encoder import EncoderConfig, build_encoder
from distributed_checks import assert_replicas_agree, replica_check
from fixtures import NLI_ROWS
from common.data.nli import DEFAULT_NLI_TRAIN
from common.data.synthetic import write_nli_jsonl
from common.training import registry
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


def test_supervised_mode_one_replica_equals_two_replicas(tmp_path):
    # The registry-wide check (tests/test_methods.py) runs the unsup smoke settings; this
    # covers the hard negatives gathered across replicas, weighted as the paper's alpha.
    nli = write_nli_jsonl(str(tmp_path / "nli.jsonl"))
    assert_replicas_agree(replica_check("simcse", {"simcse_mode": "sup", "train_data": [nli],
                                                   "hard_negative_weight": 2.0}))


def _shape(config):
    return (config.run.batch_size, config.optimizer.train_lr, config.encoder.max_seq_len, config.run.train_epochs)


def test_mode_defaults_are_the_papers():
    unsup = registry.build_config("simcse", {})
    sup = registry.build_config("simcse", {"simcse_mode": "sup"})
    assert _shape(unsup) == (64, 3e-5, 32, 1) and unsup.options.mode == "unsup"
    assert _shape(sup) == (512, 5e-5, 32, 3) and sup.options.mode == "sup"
    # Neither mode's default data is an evaluation split.
    assert unsup.run.train_data == ("sentences:documents/gutenberg/books.txt",)
    assert sup.run.train_data == DEFAULT_NLI_TRAIN
    assert registry.build_config("simcse", {"simcse_mode": "sup", "batch_size": 8}).run.batch_size == 8
    with pytest.raises(ValueError, match="simcse_mode"):
        registry.build_config("simcse", {"simcse_mode": "semi", "train_steps_per_epoch": 1}).validate()


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
