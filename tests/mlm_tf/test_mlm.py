"""Masked-LM pretraining: fresh BERTs, whole-book hold-out, packing, and a run that learns.

Kill-and-resume and 1-vs-2-replica checks come from the registry (tests/test_methods.py).
"""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from common.data.synthetic import write_documents
from common.models.sources.names import FRESH_BERTS
from common.models.encoder import EncoderConfig, build_encoder
from common.training import registry
from common.training.runs import build_and_compile, train
from mlm_tf.data import Books, pack_windows, read_books, split_books


def test_fresh_bert_tiny_has_googles_shapes_and_a_seeded_truncated_init():
    encoder = build_encoder(EncoderConfig(spec="random_bert_tiny", seed=3))
    shapes = {v.path: tuple(v.shape) for v in encoder.backbone.weights}
    assert shapes["backbone/token_embedding/embeddings"] == (30522, 128)
    assert shapes["backbone/position_embedding/embeddings"] == (512, 128)
    assert len(encoder.backbone.transformer_layers) == 2
    assert shapes["backbone/transformer_layer_0/self_attention_layer/query/kernel"] == (128, 2, 64)
    assert shapes["backbone/transformer_layer_1/feedforward_intermediate_dense/kernel"] == (128, 512)
    # The uncased WordPiece vocabulary of BERT-base-uncased: 30,522 entries, its special-token ids.
    tok = encoder.tokenizer
    assert tok.vocabulary_size == 30522 and (tok.pad_id, tok.cls_id, tok.sep_id, tok.mask_id) == (0, 101, 102, 103)
    kernel = encoder.backbone.transformer_layers[0]._feedforward_intermediate_dense.kernel.numpy()
    assert np.abs(kernel).max() <= 0.04 + 1e-7 and 0.015 < kernel.std() < 0.02  # truncated normal, stddev 0.02
    again = build_encoder(EncoderConfig(spec="random_bert_tiny", seed=3))
    other = build_encoder(EncoderConfig(spec="random_bert_tiny", seed=4))
    for a, b, c in zip(encoder.get_weights(), again.get_weights(), other.get_weights()):
        np.testing.assert_array_equal(a, b)
    assert not np.allclose(encoder.get_weights()[0], other.get_weights()[0])


def test_every_fresh_shape_and_a_bert_config_json(tmp_path):
    from common.models.bert_config import BertConfig

    assert set(FRESH_BERTS) == {"random_bert_tiny", "random_bert_mini", "random_bert_small", "random_bert_medium",
                                "random_bert_base"}
    config = {"vocab_size": 30522, "hidden_size": 64, "num_hidden_layers": 3, "num_attention_heads": 4,
              "intermediate_size": 96, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
              "max_position_embeddings": 128, "type_vocab_size": 2, "initializer_range": 0.02}
    path = tmp_path / "bert_config.json"
    path.write_text(json.dumps(config))
    encoder = build_encoder(EncoderConfig(spec=str(path)))
    assert encoder.backbone.config == BertConfig(30522, 64, 3, 4, 96, max_position_embeddings=128)
    path.write_text(json.dumps({**config, "vocab_size": 100}))
    with pytest.raises(ValueError, match="does not match the uncased WordPiece vocabulary"):
        build_encoder(EncoderConfig(spec=str(path)))


def test_packing_separates_documents_and_drops_nothing():
    docs = [np.arange(1000, 1000 + n, dtype=np.int32) for n in (5, 17, 1, 30)]
    ids, mask = pack_windows(docs, window=10, cls_id=101, sep_id=102, pad_id=0)
    assert ids.shape == (7, 10) and (ids[:, 0] == 101).all()
    lengths = mask.sum(1)
    assert (ids[np.arange(len(ids)), lengths - 1] == 102).all() and (ids[mask == 0] == 0).all()
    stream = np.concatenate([row[1:n - 1] for row, n in zip(ids, lengths)])
    expected = np.concatenate([np.append(d, 102) for d in docs])[:-1]
    np.testing.assert_array_equal(stream, expected)  # every token, in order, a [SEP] between documents
    assert mask.sum() - 2 * len(ids) == sum(len(d) for d in docs) + len(docs) - 1


def test_whole_books_are_held_out(tmp_path):
    lines = [f"book{b} document {d} words" for b in range(5) for d in range(b + 1)]
    (tmp_path / "books.txt").write_text("\n".join(lines) + "\n")
    (tmp_path / "manifest.json").write_text(json.dumps(
        {"books": [{"ebook": str(b), "title": f"Book {b}", "documents": b + 1} for b in range(5)]}))
    books = read_books([str(tmp_path / "books.txt")])
    assert [len(d) for d in books.documents] == [1, 2, 3, 4, 5]
    train_docs, held, titles = split_books(books, 2, seed=0)
    held_books = {t.split()[-1] for t in titles}
    assert len(titles) == 2 and len(train_docs) + len(held) == 15
    assert all(d.split()[0][4:] in held_books for d in held)
    assert not any(d.split()[0][4:] in held_books for d in train_docs)
    assert split_books(books, 2, seed=0) == (train_docs, held, titles)
    (tmp_path / "manifest.json").write_text(json.dumps({"books": [{"documents": 3}]}))
    with pytest.raises(ValueError, match="non-empty lines"):
        read_books([str(tmp_path / "books.txt")])
    with pytest.raises(ValueError, match="leaves no training book"):
        split_books(Books([["a"]], ["a"]), 1, 0)


def test_a_folder_of_files_is_one_book_per_file_and_per_line_keeps_lines(tmp_path):
    (tmp_path / "texts" / "b").mkdir(parents=True)
    (tmp_path / "texts" / "a.txt").write_text("first line of a\nsecond line of a\n")
    (tmp_path / "texts" / "b" / "c.md").write_text("# c\n\nbody of c\n")
    (tmp_path / "texts" / ".hidden.txt").write_text("never read\n")
    books = read_books([str(tmp_path / "texts")])
    assert books.documents == [["first line of a second line of a"], ["# c body of c"]]
    assert books.titles == ["a.txt", "b/c.md"]
    per_line = read_books([str(tmp_path / "texts")], "per_line")
    assert per_line.documents == [["first line of a"], ["second line of a"], ["# c"], ["body of c"]]
    assert per_line.titles == ["a.txt:1", "a.txt:2", "b/c.md:1", "b/c.md:2"]


def test_a_tiny_run_lowers_the_heldout_loss_and_its_artifact_starts_other_methods(tmp_path):
    docs = write_documents(str(tmp_path / "data" / "docs.txt"), n=12, words=200)
    config = registry.build_config("mlm", {
        "model": "random_tiny", "train_data": (docs,), "data_path": str(tmp_path / "data"), "batch_size": 8,
        "max_seq_len": 32, "heldout_books": 2, "heldout_windows": 16, "train_epochs": 2,
        "train_steps_per_epoch": 15, "train_lr": 5e-3, "warmup_fraction": 0.1, "eval_each_epoch": True,
        "artifacts_dir": str(tmp_path / "artifacts")})
    untrained = build_and_compile(config, tf.distribute.get_strategy())
    registry.get("mlm").make_data(config, untrained)
    before = untrained.validation_metrics()["heldout_loss"]
    run = train(config)
    after = run["metrics"]["heldout_loss"]
    assert after < before - 1.0, (before, after)  # from ln(30522) = 10.3 at the start
    assert run["data"]["heldout_documents"] > 0 and run["data"]["windows"] > 0
    # The unigram predictor on the same masks is reported beside the held-out loss.
    assert run["metrics"]["heldout_unigram_loss"] == run["data"]["heldout_unigram_loss"] > 0
    # --model=<ID> starts SimCSE from the pretrained encoder ...
    simcse = registry.build_config("simcse", {
        "model": run["run_id"], "train_data": (docs,), "data_path": str(tmp_path / "data"), "batch_size": 4,
        "train_steps_per_epoch": 1, "artifacts_dir": str(tmp_path / "artifacts"), "eval_each_epoch": False})
    model = registry.get("simcse").build_model(simcse)
    trained = registry.get("mlm").build_model(config.replace(model=run["run_id"]))
    np.testing.assert_array_equal(model.encoder.token_embedding_matrix().numpy(),
                                  trained.encoder.token_embedding_matrix().numpy())
    assert model.encoder.encoder_config.max_seq_len == 32  # SimCSE's own length, the run's architecture
    # ... and DeCLUTR continues MLM with the pretrained head, not a random one.
    declutr = registry.get("declutr").build_model(registry.build_config("declutr", {
        "model": os.path.join(str(tmp_path / "artifacts"), "model", run["run_id"])}))
    from resume_check import saved_weights

    saved = saved_weights(run["model_dir"])
    bias = [v for name, v in saved.items() if name.startswith("model/mlm_head/bias")]
    np.testing.assert_array_equal(declutr.mlm_head.bias.numpy(), bias[0])


def test_the_unigram_predictor_scores_the_masked_tokens_by_training_frequencies():
    from mlm_tf.data import unigram_baseline

    # Vocabulary of 6; ids 0-2 special. Training tokens: 3 x3, 4 x1 (plus specials, never counted).
    ids = np.array([[1, 3, 3, 4, 2, 0], [1, 3, 2, 0, 0, 0]])
    mask = np.array([[1, 1, 1, 1, 1, 0], [1, 1, 1, 0, 0, 0]])
    labels = np.array([[1, 3, 4, 5, 2, 0]])
    weights = np.array([[0.0, 1.0, 1.0, 1.0, 0.0, 0.0]])  # 3, 4 and 5 were masked
    got = unigram_baseline(ids, mask, labels, weights, special_ids=[0, 1, 2], vocab_size=6)
    p = np.array([1, 1, 1, 4, 2, 1]) / 10.0  # add-one over 4 training tokens and 6 entries
    assert got["loss"] == pytest.approx(-np.mean(np.log(p[[3, 4, 5]])))
    assert got["accuracy"] == pytest.approx(1 / 3)  # only the 3 is the most frequent token
    with pytest.raises(ValueError, match="No masked token"):
        unigram_baseline(ids, mask, labels, np.zeros_like(weights), [0, 1, 2], 6)


def test_publish_best_selects_the_lowest_heldout_loss_without_an_evaluator(tmp_path):
    from common.training.curves import read_scalars
    from common.training.publishing import write_weights
    from resume_check import saved_weights

    smoke = registry.get("mlm").smoke(str(tmp_path / "data"))

    def keep(step, model):
        write_weights(model.weights_checkpoint(), str(tmp_path / "steps" / str(step)))

    run = train(registry.build_config("mlm", {
        **smoke, "train_epochs": 1, "train_steps_per_epoch": 4, "train_lr": 5e-3, "eval_every": 1,
        "publish_best": True, "artifacts_dir": str(tmp_path / "artifacts")}), after_step=keep)
    record = json.load(open(os.path.join(run["model_dir"], "config.json")))
    losses = read_scalars(str(tmp_path / "artifacts" / "log" / run["run_id"]))[""]["eval/heldout_loss"]
    assert losses.steps == (1, 2, 3, 4)
    lowest = losses.steps[int(np.argmin(losses.values))]
    assert lowest != losses.steps[int(np.argmax(losses.values))]  # higher-is-better would choose another step
    selection = record["selection"]
    assert (selection["metric"], selection["higher_is_better"], selection["step"]) == ("heldout_loss", False, lowest)
    np.testing.assert_allclose(selection["score"], min(losses.values), rtol=1e-6)
    assert record["metrics"]["heldout_loss"] == selection["score"]
    published, chosen = saved_weights(run["model_dir"]), saved_weights(str(tmp_path / "steps" / str(lowest)))
    for key in published:
        np.testing.assert_array_equal(published[key], chosen[key], err_msg=key)
