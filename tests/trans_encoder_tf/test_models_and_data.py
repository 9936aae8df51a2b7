"""The cross-encoder model, its SavedModel, the pairs and the phase budgets."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from common.evaluation.evaluators import Evaluator
from common.export.saved_model import export_cross_encoder
from common.training import registry
from trans_encoder_tf.data import deduplicate, load_pairs, read_pair_file, sts_sickr_pairs
from trans_encoder_tf.method import DevScorer, build_phase_model, phase_loop, smoke


@pytest.fixture(scope="module")
def config(tmp_path_factory):
    return registry.build_config("trans_encoder", smoke(str(tmp_path_factory.mktemp("smoke"))))


def test_cross_encoder_scores_are_the_sigmoid_of_one_logit_per_pair(config):
    model = build_phase_model(config, "cross")
    out = model({"sentence1": tf.constant(["a man runs .", "a dog"]), "sentence2": tf.constant(["b", "c d e"])})
    assert out["logits"].shape == (2,)
    np.testing.assert_allclose(out["score"], tf.sigmoid(out["logits"]), rtol=1e-6)
    # The pair is one sequence: swapping the sentences changes the input and (in general) the score.
    swapped = model({"sentence1": tf.constant(["b"]), "sentence2": tf.constant(["a man runs ."])})["logits"]
    assert abs(float(swapped[0]) - float(out["logits"][0])) > 1e-6
    # BERT's pooler and the classifier train with the encoder.
    names = {v.path for v in model.trainable_variables}
    assert any("pooled_dense" in n for n in names) and any("classifier" in n for n in names)



class _Evaluator(Evaluator):
    """An STS-B dev evaluator stand-in: scores two fixed sentences (bi) or pairs (cross)."""

    name = "stand-in"
    primary_metric = "stsb_dev_spearman"
    scores_cross_encoders = True

    def __call__(self, embed_fn):
        return {"stsb_dev_spearman": float(np.sum(embed_fn(tf.constant(["a man runs .", "a dog"]))))}

    def pair_predictions(self, pair_fn):
        return np.asarray(pair_fn(tf.constant(["a man runs .", "a dog"]), tf.constant(["b", "c d e"])))

    def metrics_of(self, predictions):
        return {"stsb_dev_spearman": float(np.sum(predictions))}


@pytest.mark.parametrize("kind", ["bi", "cross"])
def test_a_phase_traces_its_dev_scoring_once_and_scores_its_current_weights(config, kind):
    model = build_phase_model(config, kind)
    scorer = DevScorer(model, kind)
    first = scorer(_Evaluator())[0]["stsb_dev_spearman"]
    traced = scorer.fn
    for v in model.trainable_variables:  # the phase trains between two evaluations
        v.assign(v * 1.01)
    second = scorer(_Evaluator())[0]["stsb_dev_spearman"]
    assert scorer(_Evaluator())[0]["stsb_dev_spearman"] == second != first
    assert scorer.fn is traced and traced.experimental_get_tracing_count() == 1
    assert scorer(None) == ({}, None)

LOADER = r"""
import json, sys
import tensorflow as tf, tensorflow_text  # noqa: F401  (registers the tokenizer ops)
loaded = tf.saved_model.load(sys.argv[1])
out = loaded.signatures["serving_default"](sentence1=tf.constant(json.loads(sys.argv[2])),
                                           sentence2=tf.constant(json.loads(sys.argv[3])))
assert not [m for m in sys.modules if m.split(".")[0] in ("common", "keras_hub", "trans_encoder_tf")]
print(json.dumps(out["score"].numpy().tolist()))
"""


def test_cross_encoder_savedmodel_equals_the_model_without_project_code(config, tmp_path):
    model = build_phase_model(config, "cross")
    first, second = ["a man runs .", "the cat sleeps", ""], ["a person is running .", "stocks fell", "x"]
    expected = model({"sentence1": tf.constant(first), "sentence2": tf.constant(second)})["score"].numpy()
    path = str(tmp_path / "cross")
    traces, call = [], model.call
    model.call = lambda *args, **kwargs: traces.append(1) or call(*args, **kwargs)
    export_cross_encoder([model], path)
    del model.call
    assert len(traces) == 1  # the signature calls the traced __call__, not a second trace of the model
    proc = subprocess.run([sys.executable, "-c", LOADER, path, json.dumps(first), json.dumps(second)],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": ""}, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-2000:]
    np.testing.assert_allclose(json.loads(proc.stdout.strip().splitlines()[-1]), expected, atol=1e-5)
    with pytest.raises(FileExistsError):
        export_cross_encoder([model], path)
    # Loaded through test_sts.py's resolver: the pair counter that scoring sorts batches by comes along,
    # and sorted scoring gives each pair the score it gets alone.
    from common.loading.embedding import score_sentence_pairs
    from common.loading.resolve import resolve_cross_model

    scorer = resolve_cross_model(path)
    counts = scorer.score_fn.token_counts(tf.constant(first), tf.constant(second)).numpy()
    tokens = model.tokenize(tf.constant(first), tf.constant(second))["padding_mask"].numpy().sum(1)
    np.testing.assert_array_equal(counts, tokens)
    np.testing.assert_allclose(score_sentence_pairs(scorer.score_fn, first * 3, second * 3, 4, progress=False),
                               np.tile(expected, 3), atol=1e-5)


def test_pair_file_is_read_deduplicated_and_errors_name_the_line(tmp_path):
    path = tmp_path / "pairs.tsv"
    path.write_text("a b\tc\na\tb c\na b\tc\n\nx\ty\textra column\n")
    pairs, overlap = load_pairs(str(path), str(tmp_path))
    # ("a b", "c") and ("a", "b c") are different pairs (the official concatenation key merged them).
    assert pairs == [("a b", "c"), ("a", "b c"), ("x", "y")] and overlap == ()
    assert deduplicate([("p", "q"), ("q", "p")]) == [("p", "q"), ("q", "p")]
    path.write_text("one\ttwo\nonly one sentence\n")
    with pytest.raises(ValueError, match=r"pairs.tsv:2: expected at least 2 tab-separated columns, got 1"):
        read_pair_file(str(path))
    # A table with named columns, mapped by --columns.
    table = tmp_path / "pairs.csv"
    table.write_text('id,left,right\n1,"a, b",c\n2,d,e\n')
    assert read_pair_file(str(table), {"sentence1": "left", "sentence2": "right"}) == [("a, b", "c"), ("d", "e")]
    with pytest.raises(ValueError, match=r"pairs.csv: no column for 'sentence1'.*--columns=sentence1:<column>"):
        read_pair_file(str(table))
    with pytest.raises(FileNotFoundError):
        read_pair_file(str(tmp_path / "missing.tsv"))


def test_phase_budgets_follow_the_protocol_and_the_cap(config):
    # 10 pairs: the cross-encoder sees 20 ordered pairs in batches of 4, the bi-encoder 10 in batches of 4.
    assert phase_loop(config, "cross", 10).total_steps == 5
    assert phase_loop(config, "bi", 10).steps_per_epoch == 3 and phase_loop(config, "bi", 10).total_steps == 30
    capped = config.replace(train_steps_per_epoch=2, train_epochs=3)
    assert phase_loop(capped, "cross", 10).total_steps == 2 and phase_loop(capped, "bi", 10).total_steps == 6
    official = registry.build_config("trans_encoder", {})
    assert (official.run.batch_size, official.run.train_epochs, official.optimizer.train_lr) == (128, 10, 5e-5)
    assert (official.options.cross_batch_size, official.options.cross_epochs, official.options.cross_lr) == \
        (32, 1, 2e-5)
    assert official.options.cross_max_seq_len == 64 and official.encoder.max_seq_len == 32
    assert official.options.cycles == 3 and official.options.init_with_new_models
    with pytest.raises(ValueError, match="--pairs"):
        config.replace(train_data=("x.txt",), train_steps_per_epoch=2).validate()
    # No cap given: every phase runs whole passes (the longest phase's pass is recorded).
    from trans_encoder_tf.method import resolve

    whole = resolve(config.replace(train_steps_per_epoch=0))
    assert whole.run.train_steps_per_epoch == 6  # 12 smoke pairs, both orders, batches of 4
    assert phase_loop(whole, "cross", 12).total_steps == 6 and phase_loop(whole, "bi", 12).steps_per_epoch == 3


@pytest.mark.large
def test_the_run_level_selection_flags_are_refused_for_the_per_phase_selection(config):
    capped = config.replace(train_steps_per_epoch=2)
    capped.validate()
    for given in ({"eval_every": 100}, {"publish_best": True}, {"eval_every": 100, "publish_best": True}):
        names = ", ".join(f"--{name}" for name in given)
        with pytest.raises(ValueError, match=f"--method=trans_encoder does not use {names}: it evaluates and "
                                             r"selects within each phase \(--evaluation_steps"):
            capped.replace(**given).validate()


def test_sts_sickr_pairs_are_every_sts_and_sick_pair_once(data_path):
    pairs = sts_sickr_pairs(data_path)
    # STS12-16 scored 12,544 + STS-B 8,628 + SICK 9,927 = 31,099 pairs before deduplication
    # (STS-B reuses many STS12-16 pairs).
    assert len(pairs) == 24770 and len(set(pairs)) == len(pairs)
    from common.data.sts import load_sick, load_stsb

    dev, sick = load_stsb(data_path, "dev"), load_sick(data_path, "train")[0]
    assert ((dev.sentences1[0], dev.sentences2[0]) in set(pairs)
            and (sick.sentences1[-1], sick.sentences2[-1]) in set(pairs))
