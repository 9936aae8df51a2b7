"""A run's life: failed starts leave nothing behind; user errors are one line through train.py."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from common import notices
from common.evaluation.evaluators import Evaluator, StsbDevEvaluator
from common.training import registry
from common.training.runs import train
from in_process import run_script
from resume_check import Killed, saved_weights


def test_a_run_that_fails_on_its_model_or_data_reserves_no_id(tmp_path):
    base = {**registry.get("simcse").smoke(str(tmp_path / "data")), "artifacts_dir": str(tmp_path / "artifacts"),
            "train_steps_per_epoch": 1, "eval_each_epoch": False}
    with pytest.raises(ValueError, match="Unknown encoder spec"):
        train(registry.build_config("simcse", {**base, "model": "no-such-model"}))
    with pytest.raises(FileNotFoundError, match="not found"):
        train(registry.build_config("simcse", {**base, "train_data": (str(tmp_path / "missing.txt"),)}))
    assert not os.path.exists(tmp_path / "artifacts" / "ckpt") or not os.listdir(tmp_path / "artifacts" / "ckpt")


def test_train_py_reports_a_bad_model_in_one_line_with_exit_code_2(tmp_path):
    sentences = registry.get("simcse").smoke(str(tmp_path))["train_data"][0]
    proc = run_script("train.py", ["--method=simcse", "--model=no-such-model", f"--train_data={sentences}",
                                   f"--artifacts_dir={tmp_path / 'artifacts'}"], cwd=str(tmp_path))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith("train.py: Unknown encoder spec 'no-such-model'")
    assert not os.path.exists(tmp_path / "artifacts" / "ckpt")
    # train.py prints its notices on stdout; run in this process, that choice ends with the run.
    assert notices.to_stdout(False) is False


def _simcse_settings(tmp_path, **extra):
    return {**registry.get("simcse").smoke(str(tmp_path / "data")), "artifacts_dir": str(tmp_path / "artifacts"),
            "train_epochs": 1, "train_steps_per_epoch": 4, "checkpoint_every": 2, "eval_each_epoch": False, **extra}


def test_a_publish_that_fails_on_a_full_disk_leaves_nothing_and_its_advice_publishes_the_run(tmp_path, monkeypatch):
    import errno
    import re

    from common import artifacts
    from common.training import runs

    real = runs.publish_artifact

    def disk_full(paths, record, write_models):
        def write(tmp):
            write_models(tmp)
            raise OSError(errno.ENOSPC, "No space left on device")
        return artifacts.write_atomically(paths.model_dir, write)

    monkeypatch.setattr(runs, "publish_artifact", disk_full)
    config = registry.build_config("simcse", _simcse_settings(tmp_path))
    with pytest.raises(artifacts.ArtifactWriteError) as failure:
        train(config)
    message = str(failure.value)
    assert "No space left on device" in message and "nothing was left half-written" in message
    assert os.listdir(tmp_path / "artifacts" / "model") == []  # no half-written model, no .tmp-*
    # The advice names the command that publishes the trained run; follow it.
    command = re.search(r"publish it with: python train.py (.*)$", message).group(1).split()
    flags_given = dict(arg[2:].split("=", 1) for arg in command)
    assert flags_given["artifacts_dir"] == str(tmp_path / "artifacts")
    monkeypatch.setattr(runs, "publish_artifact", real)
    result = train(config.replace(resume=flags_given["resume"]))
    assert result["run_id"] == flags_given["resume"] and os.path.isdir(result["model_dir"])
    assert result["metrics"]["step"] == 4


def test_a_resumed_run_records_the_seconds_of_all_its_pieces_and_logs_to_its_folder(tmp_path, monkeypatch):
    import json
    import re

    from common.training import loop

    class Killed(Exception):
        pass

    def kill_at_2(step, model):
        if step == 2:
            raise Killed()

    config = registry.build_config("simcse", _simcse_settings(tmp_path))
    with pytest.raises(Killed):
        train(config, after_step=kill_at_2)
    run_id = os.listdir(tmp_path / "artifacts" / "ckpt")[0]
    progress = json.loads((tmp_path / "artifacts" / "ckpt" / run_id / loop.PROGRESS_FILE).read_text())
    first_piece = progress["2"]
    assert first_piece > 0
    result = train(config.replace(resume=run_id))
    recorded = json.loads((tmp_path / "artifacts" / "model" / run_id / "config.json").read_text())["metrics"]
    assert recorded["seconds"] == result["metrics"]["seconds"] > first_piece
    log = (tmp_path / "artifacts" / "log" / run_id / "train.log").read_text()
    assert f"Run {run_id} published" in log and "step 4/4" in log
    assert re.search(r"step 4/4 .*\([0-9.]+ steps/s, 0 s left\)", log)  # the rate and the time left


@pytest.fixture(scope="module")
def one_step_run(tmp_path_factory):
    """A one-step run started beside the temporary directory of a publish that was killed, on
    sentences of which two are longer than max_seq_len (16)."""
    import json
    import socket

    tmp_path = tmp_path_factory.mktemp("one-step")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / "artifacts" / "model" / ".tmp-20261122-101500-0a1b2c3d"
    os.makedirs(stale / "embedding")
    (stale / ".owner.json").write_text(json.dumps({"host": socket.gethostname(), "pid": dead.pid}))
    sentences = tmp_path / "sentences.txt"
    long = " ".join(["word"] * 200)
    sentences.write_text("\n".join([f"a short sentence number {i}" for i in range(6)] + [long, long + " more"]) + "\n")
    result = train(registry.build_config("simcse", _simcse_settings(
        tmp_path, train_data=(str(sentences),), train_steps_per_epoch=1)))
    return tmp_path, result


def test_a_new_run_removes_the_temporary_directory_of_a_publish_that_was_killed(one_step_run):
    tmp_path, result = one_step_run
    assert os.listdir(tmp_path / "artifacts" / "model") == [result["run_id"]]


def test_a_run_counts_the_training_sentences_it_truncates(one_step_run):
    import json

    tmp_path, result = one_step_run
    assert result["data"]["truncated_sentences"] == 2  # max_seq_len 16: only the two long ones
    recorded = json.loads((tmp_path / "artifacts" / "model" / result["run_id"] / "config.json").read_text())
    assert recorded["data"]["truncated_sentences"] == 2
    log = (tmp_path / "artifacts" / "log" / result["run_id"] / "train.log").read_text()
    assert "'truncated_sentences': 2" in log  # the "Training data" line


# === --eval_every and --publish_best: the published weights are the best-scored evaluation's ===

SENTENCES = ["a man plays a guitar .", "stocks fell on monday ."]


class ScriptedEvaluator(Evaluator):
    """Stands in for STS-B dev: hands out the scores of a fixed list, one per call (no data needed);
    a call past the list fails the test."""

    name = "scripted"
    primary_metric = "stsb_dev_spearman"

    def __init__(self, scores):
        self.scores, self.calls = list(scores), 0

    def __call__(self, embed_fn):
        assert self.calls < len(self.scores), f"evaluated more than the {len(self.scores)} scripted times"
        self.calls += 1
        return {self.primary_metric: self.scores[self.calls - 1]}


def _selecting(tmp_path, **extra):
    """SimCSE, 6 steps, evaluated every 2 (and at the epoch's end, step 6), publishing the best."""
    return registry.build_config("simcse", _simcse_settings(
        tmp_path, train_steps_per_epoch=6, eval_every=2, eval_each_epoch=True, publish_best=True, **extra))


def _keep_steps(directory, steps, embeddings):
    """after_step: writes the weights of `steps` under directory/<step> and keeps every step's embeddings."""
    from common.training.publishing import write_weights

    def after_step(step, model):
        embeddings[step] = model.encoder(tf.constant(SENTENCES), training=False)["embedding"].numpy()
        if step in steps:
            write_weights(model.weights_checkpoint(), os.path.join(directory, str(step)))
    return after_step


@pytest.fixture(scope="module")
def best_of_three(tmp_path_factory):
    """An uninterrupted run scored 50, 90, 10 at steps 2, 4, 6, and its weights at steps 4 and 6."""
    tmp_path = tmp_path_factory.mktemp("best")
    embeddings = {}
    result = train(_selecting(tmp_path), evaluator=ScriptedEvaluator([50.0, 90.0, 10.0]),
                   after_step=_keep_steps(str(tmp_path / "steps"), (4, 6), embeddings))
    return result, tmp_path / "steps", embeddings


def test_publish_best_publishes_the_weights_and_embeddings_of_the_best_scored_step(best_of_three):
    from common.training.curves import read_scalars

    result, steps, embeddings = best_of_three
    published, step4, step6 = (saved_weights(d) for d in (result["model_dir"], steps / "4", steps / "6"))
    assert published.keys() == step4.keys()
    for key in published:
        np.testing.assert_array_equal(published[key], step4[key], err_msg=key)
    assert any(not np.array_equal(published[k], step6[k]) for k in published)  # the last step differs
    served = tf.saved_model.load(os.path.join(result["model_dir"], "embedding"))(tf.constant(SENTENCES)).numpy()
    np.testing.assert_allclose(served, embeddings[4], atol=1e-5)
    assert not np.allclose(served, embeddings[6], atol=1e-5)
    record = json.load(open(os.path.join(result["model_dir"], "config.json")))
    assert record["selection"] == {"metric": "stsb_dev_spearman", "higher_is_better": True, "step": 4, "score": 90.0,
                                   "last_step": 6, "last_score": 10.0}
    # The run's metrics are those of the published weights; the selection has its own record.
    assert record["metrics"]["stsb_dev_spearman"] == 90.0 and "best_step" not in record["metrics"]
    assert record["config"]["run"]["publish_best"] and record["config"]["run"]["eval_every"] == 2
    log_dir = os.path.join(os.path.dirname(os.path.dirname(result["model_dir"])), "log", result["run_id"])
    stsb = read_scalars(log_dir)[""]["eval/stsb_dev_spearman"]
    assert stsb.steps == (2, 4, 6) and stsb.values == (50.0, 90.0, 10.0)  # each evaluation, on TensorBoard


def test_publish_best_after_a_kill_and_resume_publishes_the_same_best_weights(best_of_three, tmp_path):
    result, steps, _ = best_of_three
    config = _selecting(tmp_path)

    def kill_at_5(step, model):
        if step == 5:
            raise Killed()

    # Checkpoint at step 4 (after its evaluation); killed at 5: the resumed piece scores only step 6.
    with pytest.raises(Killed):
        train(config, evaluator=ScriptedEvaluator([50.0, 90.0]), after_step=kill_at_5)
    run_id = os.listdir(tmp_path / "artifacts" / "ckpt")[0]
    resumed = train(config.replace(resume=run_id), evaluator=ScriptedEvaluator([10.0]))
    a, b = saved_weights(result["model_dir"]), saved_weights(resumed["model_dir"])
    for key in a:
        np.testing.assert_allclose(b[key], a[key], atol=1e-6, err_msg=key)
    assert resumed["weights_fingerprint"] == result["weights_fingerprint"]
    record = json.load(open(os.path.join(resumed["model_dir"], "config.json")))
    assert (record["selection"]["step"], record["selection"]["score"], record["selection"]["last_score"]) == \
        (4, 90.0, 10.0)


@pytest.mark.parametrize("settings,evaluator,message", [
    ({"publish_best": True}, None, r"--publish_best selects on stsb_dev_spearman, which the run's evaluator "
                                   r"computes, but the run was given no evaluator"),
    ({"publish_best": True, "eval_each_epoch": False}, ScriptedEvaluator([]),
     r"--publish_best chooses among the run's evaluations, and --noeval_each_epoch with --eval_every=0"),
    ({"publish_best": True, "best_metric": "heldout_loss"}, ScriptedEvaluator([]),
     r"--best_metric=heldout_loss: --method=simcse reports no held-out scores"),
    ({"best_metric": "stsb_dev_spearman"}, ScriptedEvaluator([]), r"chooses what --publish_best publishes"),
    ({"publish_best": True, "best_metric": "stsb"}, ScriptedEvaluator([]), r"--best_metric must be one of"),
    ({"eval_every": 2}, None, r"--eval_every=2: nothing to evaluate; --method=simcse has no held-out data"),
])
def test_evaluation_settings_a_run_cannot_honour_are_one_value_error_before_any_id(tmp_path, settings, evaluator,
                                                                                  message):
    config = registry.build_config("simcse", _simcse_settings(tmp_path, **{"eval_each_epoch": True, **settings}))
    with pytest.raises(ValueError, match=message):
        train(config, evaluator=evaluator)
    assert not os.path.exists(tmp_path / "artifacts" / "ckpt")


def test_publish_best_stops_at_an_evaluation_without_its_metric_rather_than_publish_the_last_step(tmp_path):
    config = _selecting(tmp_path, data_path=str(tmp_path / "no-data"))
    with pytest.raises(ValueError, match=r"at step 2 gave no stsb_dev_spearman to select on \(it gave: nothing\)\. "
                                         r"--publish_best needs it from every evaluation; the evaluator \(STS-B dev\) "
                                         r"gave none: is its data there\?"):
        train(config, evaluator=StsbDevEvaluator(config.run.data_path))  # without STS-B dev it gives {}
    run_id = os.listdir(tmp_path / "artifacts" / "ckpt")[0]
    assert not os.path.exists(tmp_path / "artifacts" / "model" / run_id)


def test_a_resumed_run_may_change_when_it_evaluates_but_not_what_it_selects(tmp_path):
    from common.training.run_settings import resume_changes

    saved = _selecting(tmp_path)
    assert resume_changes(saved, saved.replace(eval_every=3)) == {"eval_every": 3}
    for change in ({"publish_best": False}, {"best_metric": "stsb_dev_spearman"}):
        with pytest.raises(ValueError, match=f"cannot change --{next(iter(change))}"):
            resume_changes(saved, saved.replace(**change))


def test_a_run_from_an_artifact_trains_with_its_own_dropout_and_length_not_the_artifacts(tmp_path):
    """A masked-LM run without dropout must not give the SimCSE run started from it no dropout:
    dropout is SimCSE's augmentation. Nor its length: each run trains at its own --max_seq_len."""
    import json

    import keras

    from common.models.encoder import inference_encoder
    from mlm_tf.method import smoke as mlm_smoke

    def rates(encoder):
        found = [layer.rate for layer in encoder.backbone._flatten_layers() if isinstance(layer, keras.layers.Dropout)]
        assert found, "no Dropout layers in the backbone"
        return set(found)

    root = str(tmp_path / "artifacts")
    mlm = train(registry.build_config("mlm", {**mlm_smoke(str(tmp_path / "books")), "artifacts_dir": root,
                                              "dropout": 0.0, "train_epochs": 1, "train_steps_per_epoch": 1,
                                              "eval_each_epoch": False}))
    assert json.load(open(os.path.join(mlm["model_dir"], "config.json")))["encoder"]["dropout"] == 0.0  # recorded
    simcse = registry.get("simcse")
    base = {**simcse.smoke(str(tmp_path / "data")), "artifacts_dir": root, "max_seq_len": 24}
    for model in (mlm["run_id"], mlm["model_dir"]):
        inherited = simcse.build_model(registry.build_config("simcse", {**base, "model": model}))
        assert rates(inherited.encoder) == {0.1}  # the tiny BERT's own rate, not the MLM run's 0
        assert inherited.encoder.tokenizer.config.max_seq_len == 24  # its own --max_seq_len, not the MLM run's 32
        chosen = simcse.build_model(registry.build_config("simcse", {**base, "model": model, "dropout": 0.3}))
        assert rates(chosen.encoder) == {0.3}
    # The MLM run's encoder itself trains without dropout; its published SavedModel fine-tunes with 0.1.
    trained = registry.get("mlm").build_model(registry.build_config("mlm", {
        **mlm_smoke(str(tmp_path / "books")), "artifacts_dir": root, "dropout": 0.0}))
    assert rates(trained.encoder) == {0.0} and rates(inference_encoder(trained.encoder)) == {0.1}
