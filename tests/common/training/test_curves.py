"""Training curves: read back from a run's event files exactly as logged, drawn into its artifact."""

import json
import os
import re

import numpy as np
import pytest
import tensorflow as tf

from common.training import registry
from common.evaluation.evaluators import Evaluator
from common.training.curves import CURVES_FILE, plot_training_curves, read_scalars, series
from common.training.runs import train

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _pause_settings(tmp_path, **extra):
    return {**registry.get("pause").smoke(str(tmp_path / "data")), "artifacts_dir": str(tmp_path / "artifacts"),
            "train_epochs": 2, "train_steps_per_epoch": 3, "checkpoint_every": 2, "log_every": 1,
            "eval_each_epoch": True, **extra}


class _CountingEvaluator(Evaluator):
    """Stands in for STS-B dev: 10, 20, ... at successive epoch ends (no data needed)."""

    name = "counting"
    primary_metric = "stsb_dev_spearman"

    def __init__(self):
        self.calls = 0

    def __call__(self, embed_fn):
        self.calls += 1
        return {self.primary_metric: 10.0 * self.calls}


def _logged(log_text, key):
    """{step: value} of `key` in train.log's "step N/M k=v ..." lines (a step logged twice must agree)."""
    found = {}
    for step, rest in re.findall(r"step (\d+)/\d+ (.*?) \(", log_text):
        value = float(re.search(rf"(?:^| ){key}=(\S+)", rest).group(1))
        assert found.setdefault(int(step), value) == value
    return found


def test_a_run_publishes_its_curves_drawn_from_the_scalars_it_logged(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    class Killed(Exception):
        pass

    def kill_at_5(step, model):
        if step == 5:
            raise Killed()

    config = registry.build_config("pause", _pause_settings(tmp_path))
    with pytest.raises(Killed):  # the last checkpoint is at step 4: the resumed piece logs step 5 again
        train(config, evaluator=_CountingEvaluator(), after_step=kill_at_5)
    run_id = os.listdir(tmp_path / "artifacts" / "ckpt")[0]
    result = train(config.replace(resume=run_id), evaluator=_CountingEvaluator())
    log_dir = tmp_path / "artifacts" / "log" / run_id
    assert len([f for f in os.listdir(log_dir) if f.startswith("events.")]) == 2  # one per piece

    scalars = read_scalars(str(log_dir))
    assert list(scalars) == [""]  # one model, no phases
    loss = scalars[""]["train/loss"]
    assert loss.steps == (1, 2, 3, 4, 5, 6)
    # The values are what the log printed (4 significant digits) and what the run returned (float32, as stored).
    logged = _logged((log_dir / "train.log").read_text(), "loss")
    assert sorted(logged) == list(loss.steps)
    for step, value in zip(loss.steps, loss.values):
        assert f"{value:.4g}" == f"{logged[step]:.4g}", step
    assert loss.values[-1] == float(np.float32(result["metrics"]["loss"]))
    # ... and exactly what TensorBoard's own reader finds in the newest events file (steps 5-6).
    newest = sorted(f for f in os.listdir(log_dir) if f.startswith("events."))[-1]
    accumulator = EventAccumulator(str(log_dir / newest), size_guidance={"tensors": 0})
    accumulator.Reload()
    board = {e.step: float(tf.make_ndarray(e.tensor_proto)) for e in accumulator.Tensors("train/loss")}
    assert board == {5: loss.values[4], 6: loss.values[5]}
    for tag in ("train/ce", "train/pu", "train/pu_weight", "train/learning_rate"):
        assert scalars[""][tag].steps == loss.steps, tag
    pu_weight = scalars[""]["train/pu_weight"].values  # (step / total)^3: rises to about 1
    assert list(pu_weight) == sorted(pu_weight) and pu_weight[-1] > 0.5
    stsb = scalars[""]["eval/stsb_dev_spearman"]
    assert stsb.steps == (3, 6) and stsb.values == (10.0, 10.0)  # each piece's evaluator counted from 1

    picture = tmp_path / "artifacts" / "model" / run_id / CURVES_FILE
    data = picture.read_bytes()
    assert data.startswith(PNG_SIGNATURE) and len(data) > 20_000
    # The published picture is the drawing of exactly these scalars.
    assert plot_training_curves(scalars, f"run {run_id} (pause)") == data
    recorded = json.loads((tmp_path / "artifacts" / "model" / run_id / "config.json").read_text())
    assert recorded["training_curves"] == CURVES_FILE and "training_curves_error" not in recorded


def test_a_run_whose_curves_cannot_be_drawn_is_published_without_them(tmp_path, monkeypatch):
    from common.training import publishing

    def broken(*args, **kwargs):
        raise RuntimeError("matplotlib has no usable backend")

    monkeypatch.setattr(publishing, "plot_training_curves", broken)
    settings = _pause_settings(tmp_path, train_epochs=1, train_steps_per_epoch=2, eval_each_epoch=False)
    result = train(registry.build_config("pause", settings))
    model_dir = result["model_dir"]
    assert os.path.isdir(os.path.join(model_dir, "embedding"))
    assert not os.path.exists(os.path.join(model_dir, CURVES_FILE))
    recorded = json.loads(open(os.path.join(model_dir, "config.json")).read())
    assert recorded["training_curves"] is None
    assert recorded["training_curves_error"] == "RuntimeError: matplotlib has no usable backend"
    assert os.listdir(os.path.dirname(model_dir)) == [result["run_id"]]  # no .tmp-* left
    log = open(os.path.join(settings["artifacts_dir"], "log", result["run_id"], "train.log")).read()
    assert f"no {CURVES_FILE} (RuntimeError: matplotlib has no usable backend)" in log


def _write_events(log_dir, values_by_step, tag="train/loss"):
    writer = tf.summary.create_file_writer(str(log_dir))
    with writer.as_default():
        for step, value in values_by_step.items():
            tf.summary.scalar(tag, value, step=step)
    writer.flush()
    writer.close()


def test_phases_are_put_end_to_end_on_the_run_step(tmp_path):
    import time

    _write_events(tmp_path / "cycle1_cross_a", {2: 0.9, 4: 0.7})
    time.sleep(0.01)  # the phases are ordered by when they started
    _write_events(tmp_path / "cycle1_bi_a", {3: 0.5, 6: 0.25})
    _write_events(tmp_path / "cycle1_bi_a", {6: 0.2, 9: 0.1}, tag="eval/stsb_dev_spearman")
    scalars = read_scalars(str(tmp_path))
    assert list(scalars) == ["cycle1_cross_a", "cycle1_bi_a"]
    loss = series(scalars, "train/loss")
    assert loss.steps == (2, 4, 7, 10)
    np.testing.assert_allclose(loss.values, [0.9, 0.7, 0.5, 0.25], rtol=1e-7)
    assert series(scalars, "eval/stsb_dev_spearman").steps == (10, 13)
    assert plot_training_curves(scalars, "phases").startswith(PNG_SIGNATURE)
    assert read_scalars(str(tmp_path / "missing")) == {} and plot_training_curves({}, "none") is None
