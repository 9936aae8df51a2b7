"""run_training's selection of the best-scored weights (Trans-Encoder's phases use it)."""

import json
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from common.training.loop import LoopConfig, RunPaths, run_training

# Scores a `select` function hands out, by step: the best is step 4, not the last.
SCORES = {2: 0.50, 4: 0.90, 6: 0.10, 8: 0.30}


class Interrupt(Exception):
    pass


def _model():
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse", jit_compile=False)
    return model


def _data(start):
    x = np.arange(24, dtype=np.float32).reshape(8, 3) / 10.0
    y = x.sum(axis=1, keepdims=True)
    return tf.data.Dataset.from_tensors((x, y)).repeat()


def _train(tmp_path, model, weights_by_step, kill_at=None, select=True, evaluate_every=2):
    loop = LoopConfig(total_steps=8, steps_per_epoch=8, checkpoint_every=1, log_every=4, evaluate_every=evaluate_every)
    paths = RunPaths("run", str(tmp_path / "log"), str(tmp_path / "ckpt"), str(tmp_path / "model"))
    scored = []

    def after_step(step, m):
        weights_by_step[step] = [w.numpy().copy() for w in m.weights]
        if step == kill_at:
            raise Interrupt()

    def score(step):
        scored.append(step)
        return SCORES.get(step)

    out = run_training(model, _data, tf.distribute.get_strategy(), loop, paths, True, None, after_step,
                       score if select else None)
    return out, scored


def _assert_weights(model, expected):
    for w, value in zip(model.weights, expected):
        np.testing.assert_array_equal(w.numpy(), value)


def test_a_run_with_selection_ends_with_its_best_scored_weights(tmp_path):
    model, weights = _model(), {}
    out, scored = _train(tmp_path, model, weights)
    assert scored == [2, 4, 6, 8]  # every evaluate_every steps; the epoch end (8) coincides
    assert (out["best_step"], out["best_score"]) == (4, pytest.approx(0.9))
    _assert_weights(model, weights[4])
    assert not np.array_equal(weights[4][0], weights[8][0])
    assert json.load(open(tmp_path / "ckpt" / "best" / "best.json")) == {"step": 4, "score": pytest.approx(0.9)}


def test_without_selection_a_run_ends_with_its_last_step(tmp_path):
    model, weights = _model(), {}
    out, scored = _train(tmp_path, model, weights, select=False)
    assert scored == [] and "best_step" not in out
    _assert_weights(model, weights[8])
    assert not os.path.exists(tmp_path / "ckpt" / "best")


@pytest.mark.parametrize("kill_at", [5, 8])
def test_a_killed_run_resumes_knowing_its_best_weights(tmp_path, kill_at):
    """Killed after its best step (4): the resumed piece never sees step 4 again, yet ends with its weights."""
    reference, ref_weights = _model(), {}
    _train(tmp_path / "reference", reference, ref_weights)
    model, weights = _model(), {}
    with pytest.raises(Interrupt):
        _train(tmp_path, model, weights, kill_at=kill_at)
    resumed, resumed_weights = _model(), {}
    out, scored = _train(tmp_path, resumed, resumed_weights)
    assert scored == [s for s in (2, 4, 6, 8) if s > kill_at]
    assert (out["best_step"], out["best_score"]) == (4, pytest.approx(0.9))
    _assert_weights(resumed, ref_weights[4])


def test_epoch_ends_are_scored_when_evaluate_every_is_zero(tmp_path):
    model, weights = _model(), {}
    out, scored = _train(tmp_path, model, weights, evaluate_every=0)
    assert scored == [8] and out["best_step"] == 8
