"""run_training's evaluations and its selection of the best-scored weights (every method's --publish_best
and Trans-Encoder's phases use it)."""

import json
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from common.training import loop as loop_module
from common.training.loop import LoopConfig, RunPaths, Selection, run_training

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


def _train(tmp_path, model, weights_by_step, kill_at=None, select=True, evaluate_every=2, scores=SCORES,
           selection=Selection("score"), epoch_ends=True):
    loop = LoopConfig(total_steps=8, steps_per_epoch=8, checkpoint_every=1, log_every=4,
                      evaluate_every=evaluate_every, evaluate_epoch_ends=epoch_ends)
    paths = RunPaths("run", str(tmp_path / "log"), str(tmp_path / "ckpt"), str(tmp_path / "model"))
    scored = []

    def after_step(step, m):
        weights_by_step[step] = [w.numpy().copy() for w in m.weights]
        if step == kill_at:
            raise Interrupt()

    def evaluate(step):
        scored.append(step)
        return {"score": scores[step], "other": -1.0} if step in scores else {"other": -1.0}

    out = run_training(model, _data, tf.distribute.get_strategy(), loop, paths, True, evaluate if select else None,
                       after_step, selection if select else None)
    return out, scored


def _assert_weights(model, expected):
    for w, value in zip(model.weights, expected):
        np.testing.assert_array_equal(w.numpy(), value)


def test_a_run_with_selection_ends_with_its_best_scored_weights(tmp_path):
    model, weights = _model(), {}
    out, scored = _train(tmp_path, model, weights)
    assert scored == [2, 4, 6, 8]  # every evaluate_every steps; the epoch end (8) coincides
    assert (out["best_step"], out["best_score"]) == (4, pytest.approx(0.9))
    assert (out["last_step"], out["last_score"], out["score"]) == (8, pytest.approx(0.3), pytest.approx(0.9))
    _assert_weights(model, weights[4])
    assert not np.array_equal(weights[4][0], weights[8][0])
    assert json.load(open(tmp_path / "ckpt" / "best" / "best.json")) == {
        "step": 4, "score": pytest.approx(0.9), "metrics": {"score": pytest.approx(0.9), "other": -1.0},
        "weights": "weights-4", "last_step": 8, "last_score": pytest.approx(0.3)}
    assert sorted(os.listdir(tmp_path / "ckpt" / "best")) == ["best.json", "weights-4.data-00000-of-00001",
                                                              "weights-4.index"]


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


def test_a_lower_is_better_selection_keeps_the_lowest_score(tmp_path):
    model, weights = _model(), {}
    out, _ = _train(tmp_path, model, weights, selection=Selection("score", higher_is_better=False))
    assert (out["best_step"], out["best_score"]) == (6, pytest.approx(0.1))
    _assert_weights(model, weights[6])


def test_a_selection_scores_the_last_step_even_without_epoch_end_evaluations(tmp_path):
    model, weights = _model(), {}
    out, scored = _train(tmp_path, model, weights, evaluate_every=3, epoch_ends=False, scores={3: 0.2, 6: 0.9, 8: 0.5})
    assert scored == [3, 6, 8] and (out["best_step"], out["last_step"], out["last_score"]) == (6, 8, 0.5)


def test_evaluations_without_a_selection_are_logged_and_the_run_ends_with_its_last_step(tmp_path):
    from common.training.curves import read_scalars

    model, weights = _model(), {}
    out, scored = _train(tmp_path, model, weights, selection=None)
    assert scored == [2, 4, 6, 8] and "best_step" not in out and out["score"] == pytest.approx(0.3)
    _assert_weights(model, weights[8])
    assert read_scalars(str(tmp_path / "log"))[""]["eval/score"].steps == (2, 4, 6, 8)
    assert not os.path.exists(tmp_path / "ckpt" / "best")


def test_an_evaluation_without_the_selected_metric_is_an_error_when_the_selection_says_so(tmp_path):
    model, weights = _model(), {}
    out, _ = _train(tmp_path / "lenient", model, weights, scores={})
    assert "best_step" not in out and out["last_score"] is None  # no score: no candidate, the last step
    _assert_weights(model, weights[8])
    with pytest.raises(ValueError, match=r"at step 2 gave no score to select on \(it gave: other\)\. Check it\."):
        _train(tmp_path / "strict", _model(), {}, scores={}, selection=Selection("score", missing="Check it."))


def test_a_kill_while_a_new_best_is_written_leaves_the_previous_best_intact(tmp_path, monkeypatch):
    """Killed after step 6's (better) weights are written but before best.json names them, and resumed
    at a cadence that never scores step 6 again: the run ends with step 4's weights, as recorded."""
    scores = {**SCORES, 6: 0.95}
    reference = {}
    _train(tmp_path / "reference", _model(), reference, scores=scores)
    real = loop_module.artifacts.write_json

    def killed_at_6(path, obj):
        if path.endswith("best.json") and obj["step"] == 6:
            raise Interrupt()
        real(path, obj)

    monkeypatch.setattr(loop_module.artifacts, "write_json", killed_at_6)
    with pytest.raises(Interrupt):
        _train(tmp_path, _model(), {}, scores=scores)
    assert os.path.exists(tmp_path / "ckpt" / "best" / "weights-6.index")  # written, not yet recorded
    monkeypatch.setattr(loop_module.artifacts, "write_json", real)
    resumed = _model()
    out, scored = _train(tmp_path, resumed, {}, scores=scores, evaluate_every=0)
    assert scored == [8] and (out["best_step"], out["best_score"]) == (4, pytest.approx(0.9))
    _assert_weights(resumed, reference[4])
    assert sorted(os.listdir(tmp_path / "ckpt" / "best"))[1:] == ["weights-4.data-00000-of-00001",
                                                                  "weights-4.index"]
