"""Gradient caching (`--mini_batch_size`) equals the plain step: the memory-saving
variant is checked against the plain one on a tiny random BERT, for every method that
has it (SimCSE unsup and sup, DeCLUTR contrastive + MLM)."""

import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from common.data.synthetic import write_nli_jsonl
from common.training import grad_cache, registry
from common.training.grad_cache import cached_gradients, mini_batch_chunks, split_batch
from common.training.loop import rng_variables
from common.training.runs import seeded, train
from distributed_checks import assert_replicas_agree, replica_checks
from in_process import run_script
from resume_check import full_and_resumed_runs, saved_weights

# name -> (method, settings over its smoke settings, mini_batch_size): 4 mini-batches each.
# SimCSE on a 2-layer BERT: random_tiny's one layer gives its loss gradients below the checks' floor of 1e-4.
CASES = {
    "simcse_unsup": ("simcse", {"model": "random_bert_tiny"}, 2),
    "simcse_sup": ("simcse", {"simcse_mode": "sup", "hard_negative_weight": 2.0, "model": "random_bert_tiny"}, 2),
    "declutr": ("declutr", {"batch_size": 4}, 1),
}


def _settings(case, directory, **extra):
    name, settings, mini = CASES[case]
    method = registry.get(name)
    out = {**method.smoke(directory), "train_steps_per_epoch": 4, **settings, **extra}
    if out.get("simcse_mode") == "sup":
        out["train_data"] = (write_nli_jsonl(os.path.join(directory, "nli.jsonl")),)
    return name, out, mini


def _build(name, settings):
    config = registry.build_config(name, settings)
    config.validate()
    with seeded(0):
        model = registry.get(name).build_model(config)
    model.clip_norm = config.optimizer.clip_norm or None
    # SGD: the update is proportional to the gradient, so a wrong gradient shows in the weights.
    model.compile(optimizer=keras.optimizers.SGD(0.5), jit_compile=False)
    return config, model


def _batch(name, config, model):
    make_dataset, _ = registry.get(name).make_data(config, model)
    return next(iter(make_dataset(0)))


def _dense(grads):
    return [None if g is None else tf.convert_to_tensor(g).numpy() for g in grads]


def _assert_same_grads(a, b, atol=1e-5, rtol=1e-5):
    # float32 sums in another order: large entries (|g| ~ 20) differ in the 7th significant digit, so the
    # tolerance is relative as well as absolute; a wrong mask or a missed chunk is off by orders more.
    assert [g is None for g in a] == [g is None for g in b]
    for x, y in zip(a, b):
        if x is not None:
            np.testing.assert_allclose(x, y, atol=atol, rtol=rtol)


@pytest.mark.parametrize("case", list(CASES))
def test_without_dropout_the_cached_step_equals_the_plain_step(case, tmp_path):
    name, settings, mini = _settings(case, str(tmp_path), dropout=0.0)
    config, plain = _build(name, settings)
    _, cached = _build(name, {**settings, "mini_batch_size": mini})
    assert plain.mini_batch_chunks == 0 and cached.mini_batch_chunks == 4
    batch = _batch(name, config, plain)

    grads_p, out_p = tf.function(plain.compute_gradients)(batch)
    grads_c, out_c = tf.function(cached.compute_gradients)(batch)
    for key in out_p:
        np.testing.assert_allclose(float(out_c[key]), float(out_p[key]), atol=1e-5, err_msg=key)
    grads_p, grads_c = _dense(grads_p), _dense(grads_c)
    assert max(np.abs(g).max() for g in grads_p if g is not None) > 1e-4  # as the replica check
    _assert_same_grads(grads_p, grads_c)
    if case == "declutr":
        assert float(out_p["mlm"]) > 0 and float(out_p["contrastive"]) > 0  # both objectives are in the check

    # One step through each model's own train function (clip included).
    fresh = plain.get_weights()
    for model in (plain, cached):
        model.make_train_function()
        model.train_function(iter(tf.data.Dataset.from_tensors(batch)))
    moved = max(np.abs(a - b).max() for a, b in zip(plain.get_weights(), fresh))
    assert moved > 1e-4
    for a, b in zip(plain.get_weights(), cached.get_weights()):
        np.testing.assert_allclose(a, b, atol=1e-5)


def _states(model):
    return [v.numpy().copy() for v in rng_variables(model)]


def _set_states(model, values):
    for v, x in zip(rng_variables(model), values):
        v.assign(x)


def _mini_batch_by_mini_batch(model, batch, chunks):
    """The plain loss's gradient when the batch is embedded one mini-batch after the
    other under one tape: the masks the cached step must replay."""
    part = split_batch(batch, chunks)
    with tf.GradientTape() as tape:
        pieces = [model.embed_views(part(i), training=True) for i in range(chunks)]
        views = {n: tf.concat([p[0][n] for p in pieces], 0) for n in pieces[0][0]}
        sums = {n: tf.add_n([p[1][n] for p in pieces]) for n in pieces[0][1]}
        out = model.loss_from_views(views, sums)
    return _dense(tape.gradient(out["loss"], model.trainable_variables)), out


@pytest.mark.parametrize("case", ["simcse_unsup", "declutr"])
def test_with_dropout_the_second_pass_replays_the_first_pass_masks(case, tmp_path, monkeypatch):
    name, settings, mini = _settings(case, str(tmp_path), dropout=0.2)
    config, model = _build(name, {**settings, "mini_batch_size": mini})
    batch = _batch(name, config, model)
    chunks = model.mini_batch_chunks
    before = _states(model)

    # Eager: the loops run in Python, so every embedding of each pass can be recorded.
    calls = []

    def recording(part):
        views, sums = model.embed_views(part, training=True)
        calls.append({n: v.numpy() for n, v in {**views, **sums}.items()})
        return views, sums

    grads, out = cached_gradients(recording, model.loss_from_views, batch, chunks, model.trainable_variables,
                                  rng_variables(model))
    after = _states(model)
    assert len(calls) == 2 * chunks
    for first, second in zip(calls[:chunks], calls[chunks:]):
        for n in first:
            np.testing.assert_array_equal(first[n], second[n], err_msg=n)
    # Dropout is on: the same mini-batch embedded without the replayed states differs.
    view = next(iter(calls[0]))
    _set_states(model, before)
    model.embed_views(split_batch(batch, chunks)(0), training=True)
    again = model.embed_views(split_batch(batch, chunks)(0), training=True)[0][view].numpy()
    assert np.abs(again - calls[0][view]).max() > 1e-4

    _set_states(model, before)
    expected, expected_out = _mini_batch_by_mini_batch(model, batch, chunks)
    # The seed states end where the mini-batches' single passes leave them (a resumed run continues there).
    for a, b in zip(after, _states(model)):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(float(out["total"]), float(expected_out["total"]), atol=1e-5)
    _assert_same_grads(_dense(grads), expected)

    # Compiled, as training runs it.
    _set_states(model, before)
    compiled, _ = tf.function(model.compute_gradients)(batch)
    _assert_same_grads(_dense(compiled), expected)
    for a, b in zip(after, _states(model)):
        np.testing.assert_array_equal(a, b)

    # The check can fail: without the replay the second pass draws new masks.
    monkeypatch.setattr(grad_cache, "_restore_states", lambda states, values: None)
    _set_states(model, before)
    unreplayed, _ = cached_gradients(lambda part: model.embed_views(part, training=True), model.loss_from_views,
                                     batch, chunks, model.trainable_variables, rng_variables(model))
    assert max(np.abs(a - b).max() for a, b in zip(_dense(unreplayed), expected) if a is not None) > 1e-4


@pytest.fixture(scope="module")
def cached_replica_results(tmp_path_factory):
    """Every case's replica check, in one process."""
    checks = []
    for case in CASES:
        name, settings, mini = _settings(case, str(tmp_path_factory.mktemp(case)))
        extra = {k: v for k, v in settings.items() if k in CASES[case][1] or k == "train_data"}
        checks.append({"method": name, "settings": {**extra, "mini_batch_size": mini}})
    return dict(zip(CASES, replica_checks(checks)))


@pytest.mark.parametrize("case", list(CASES))
def test_cached_one_replica_equals_two_replicas(case, cached_replica_results):
    # One replica caches 4 mini-batches, each of two replicas 2 (same mini-batch size).
    assert_replicas_agree(cached_replica_results[case])


def test_a_cached_run_resumes_exactly(tmp_path):
    name, settings, mini = _settings("simcse_unsup", str(tmp_path / "data"))
    assert registry.build_config(name, settings).encoder.dropout is None  # the tiny BERT's own dropout (0.1)
    config = registry.build_config(name, {
        **settings, "mini_batch_size": mini, "train_epochs": 2, "train_steps_per_epoch": 4, "checkpoint_every": 3,
        "log_every": 1, "eval_each_epoch": False})
    full, resumed = full_and_resumed_runs(train, config, tmp_path)
    a, b = saved_weights(full["model_dir"]), saved_weights(resumed["model_dir"])
    assert a and a.keys() == b.keys()
    for key in a:
        np.testing.assert_allclose(a[key], b[key], atol=1e-6, err_msg=key)


def test_mini_batch_size_must_divide_the_per_replica_batch():
    assert mini_batch_chunks(0, 8) == 0
    assert mini_batch_chunks(2, 8, replicas=1) == 4 and mini_batch_chunks(2, 8, replicas=2) == 2
    with pytest.raises(ValueError, match=r"--mini_batch_size must divide --batch_size=8; got --mini_batch_size=3"):
        mini_batch_chunks(3, 8, replicas=1)
    with pytest.raises(ValueError, match=r"per-replica batch \(--batch_size=12 over 2 replicas: 6\)"):
        mini_batch_chunks(4, 12, replicas=2)
    with pytest.raises(ValueError, match="split evenly over the 2 replicas"):
        mini_batch_chunks(1, 7, replicas=2)


def test_train_py_refuses_a_mini_batch_size_that_does_not_divide_the_batch(tmp_path):
    proc = run_script("train.py", ["--method=simcse", "--model=random_tiny", "--batch_size=8", "--mini_batch_size=3",
                                   "--train_steps_per_epoch=1", f"--artifacts_dir={tmp_path}"], cwd=str(tmp_path))
    assert proc.returncode == 2, proc.stderr[-2000:]
    # One line, no traceback (as tests/test_scripts.py: only a CPU machine's CUDA driver probe may precede it).
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("train.py: --mini_batch_size must divide --batch_size=8"), proc.stderr
    assert "Traceback" not in proc.stderr
    assert not os.listdir(tmp_path)  # refused before anything was written


def test_fp16_caching_scales_the_backward_pass_and_matches_the_plain_fp16_step(tmp_path):
    """With --precision=fp16 the cached step multiplies the gradients flowing back through the
    float16 encoder by the loss scale and divides them out again, as the plain fp16 step does."""
    name, settings, mini = _settings("simcse_unsup", str(tmp_path), dropout=0.0, precision="fp16")
    config, plain = _build(name, settings)
    _, cached = _build(name, {**settings, "mini_batch_size": mini})
    assert plain.loss_scale is not None and cached.loss_scale is not None
    batch = _batch(name, config, plain)
    grads_p, out_p = tf.function(plain.compute_gradients)(batch)
    grads_c, out_c = tf.function(cached.compute_gradients)(batch)
    np.testing.assert_allclose(float(out_c["loss"]), float(out_p["loss"]), rtol=1e-3)
    grads_p, grads_c = _dense(grads_p), _dense(grads_c)
    assert all(np.isfinite(g).all() for g in grads_c if g is not None)
    assert [g is None for g in grads_p] == [g is None for g in grads_c]
    # float16 rounding differs between the two orders of computation; a wrong or missing loss
    # scale would be off by orders of magnitude.
    # Globally (tensors whose true gradient is ~0, e.g. attention key biases, are float16 noise).
    diff = sum(np.linalg.norm(c - p) ** 2 for p, c in zip(grads_p, grads_c) if p is not None)
    size = sum(np.linalg.norm(p) ** 2 for p in grads_p if p is not None)
    assert np.sqrt(diff / size) < 0.1  # measured: 0.037; an unscaled gradient would be 2**15 times off
