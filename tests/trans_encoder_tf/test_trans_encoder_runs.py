"""Trans-Encoder runs end to end: two cycles through train.py and test_sts.py in both
modes, and exact resume of a run killed in either phase of cycle 2 (against that
train.py run)."""

import json
import os

import numpy as np
import pytest

from common.evaluation.evaluators import StsbDevEvaluator
from common.training import registry
from common.training.runs import train
from fixtures import write_sts_root
from in_process import run_script
from resume_check import Killed, saved_weights
from trans_encoder_tf.method import smoke


# Two cycles of a cross phase (3 steps, 1 epoch) and a bi phase (6 steps, 2 epochs), each model
# continuing from its previous cycle; cycle 2 is run steps 10-18. STS-B dev scores each phase at its
# epoch ends and the phase ends with its best-scored weights (train.py's evaluator).
TWO_CYCLES = {"cycles": 2, "train_epochs": 2, "train_steps_per_epoch": 3, "checkpoint_every": 2, "log_every": 1,
              "init_with_new_models": False}


@pytest.fixture(scope="module")
def two_cycles(tmp_path_factory):
    """A two-cycle run through train.py: the script test's run, and the uninterrupted run the
    killed-and-resumed one must equal."""
    root = tmp_path_factory.mktemp("two-cycles")
    data = write_sts_root(str(root / "data"))
    settings = {**smoke(data), **TWO_CYCLES}
    artifacts = root / "artifacts"
    args = [f"--{k}={v}" for k, v in settings.items() if not isinstance(v, bool)] + ["--noinit_with_new_models"]
    proc = run_script("train.py", ["--method=trans_encoder", *args, f"--artifacts_dir={artifacts}"], cwd=str(root))
    assert proc.returncode == 0, proc.stderr[-3000:]
    run_id = next(line.split(": ")[1] for line in proc.stdout.splitlines() if line.startswith("run ID:"))
    return {"root": root, "data": data, "settings": settings, "artifacts": artifacts, "proc": proc, "run_id": run_id}


def test_two_cycles_through_train_py_then_test_sts_py_in_both_modes(two_cycles):
    root, data, artifacts, proc, run_id = (two_cycles[k] for k in ("root", "data", "artifacts", "proc", "run_id"))
    assert f"test_sts.py --model={run_id} --mode=cross" in proc.stdout
    model_dir = artifacts / "model" / run_id
    record = json.load(open(model_dir / "config.json"))
    # STS-B dev of the start, of every phase and of every cycle; the published cycles.
    assert [p["phase"] for p in record["phases"]] == ["cycle1_cross_a", "cycle1_bi_a", "cycle2_cross_a",
                                                      "cycle2_bi_a"]
    assert [p["steps"] for p in record["phases"]] == [3, 6, 3, 6] and all("stsb_dev_spearman" in p
                                                                        for p in record["phases"])
    # Each phase was scored on STS-B dev at its epoch ends while it trained and ended with its
    # best-scored weights.
    for p in record["phases"]:
        assert p["metrics"]["best_step"] in ((3,) if p["kind"] == "cross" else (3, 6))
        np.testing.assert_allclose(p["metrics"]["best_score"], p["stsb_dev_spearman"], atol=1e-6)
    assert [sorted(c) for c in record["cycles"]] == [["bi_a", "cross_a", "cycle"]] * 2
    assert "bi_a" in record["start"] and set(record["best_cycle"]) == {"bi", "cross"}
    assert "stsb_dev_spearman" in record["metrics"] and "cross_stsb_dev_spearman" in record["metrics"]
    assert record["metrics"]["step"] == 18 and record["data"]["pairs"] == 12
    assert os.listdir(artifacts / "log" / run_id)  # TensorBoard scalars per phase
    common = [f"--model={run_id}", f"--data_path={data}", f"--artifacts_dir={artifacts}"]
    bi = run_script("test_sts.py", [*common, "--mode=bi"], cwd=str(root))
    assert bi.returncode == 0, bi.stderr[-2000:]
    cross = run_script("test_sts.py", [*common, "--mode=cross"], cwd=str(root))
    assert cross.returncode == 0, cross.stderr[-2000:]
    bi_result = json.load(open(artifacts / "test" / f"sts_{run_id}.json"))
    cross_result = json.load(open(artifacts / "test" / f"sts_{run_id}_cross.json"))
    assert (bi_result["mode"], cross_result["mode"]) == ("bi", "cross")
    assert cross_result["source"].endswith("cross") and bi_result["source"].endswith("embedding")
    # The cross-encoder's STS-B dev score is the one the run recorded for its published cycle.
    np.testing.assert_allclose(cross_result["stsb"]["dev"], record["metrics"]["cross_stsb_dev_spearman"], atol=1e-3)
    np.testing.assert_allclose(bi_result["stsb"]["dev"], record["metrics"]["stsb_dev_spearman"], atol=1e-3)
    # A cross-encoder scored as a bi-encoder is refused, naming the mode it needs.
    wrong = run_script("test_sts.py", [f"--model={model_dir / 'cross'}", f"--data_path={data}",
                                       f"--artifacts_dir={artifacts}"], cwd=str(root))
    assert wrong.returncode == 2 and "--mode=cross" in wrong.stderr and "Traceback" not in wrong.stderr
    wrong = run_script("test_sts.py", ["--model=random_tiny", "--mode=cross", f"--data_path={data}",
                                       f"--artifacts_dir={artifacts}"], cwd=str(root))
    assert wrong.returncode == 2 and "--mode=bi" in wrong.stderr


def _kill_at(step):
    def after_step(global_step, model):
        if global_step == step:
            raise Killed()
    return after_step


def test_a_run_killed_in_either_phase_of_cycle_2_resumes_exactly(two_cycles, tmp_path):
    # The train.py run in this process, with the evaluator train.py passes (its selections included).
    config = registry.build_config("trans_encoder", two_cycles["settings"])
    evaluator = StsbDevEvaluator(two_cycles["data"], progress=False)
    full_dir = two_cycles["artifacts"] / "model" / two_cycles["run_id"]
    interrupted = config.replace(artifacts_dir=str(tmp_path / "b"))
    with pytest.raises(Killed):
        train(interrupted, evaluator=evaluator, after_step=_kill_at(11))  # cycle 2, cross phase step 2 (checkpointed)
    run_id = os.listdir(tmp_path / "b" / "ckpt")[0]
    phases = tmp_path / "b" / "ckpt" / run_id / "phases"
    assert sorted(os.listdir(phases)) == ["cycle1_bi_a", "cycle1_cross_a", "cycle2_cross_a"]
    assert ((phases / "cycle2_cross_a" / "labels.npy").exists()
            and not (phases / "cycle2_cross_a" / "done.json").exists())
    with pytest.raises(Killed):
        # cycle 2, bi phase step 5 (last checkpoint: 4; best so far: step 3's)
        train(interrupted.replace(resume=run_id), evaluator=evaluator, after_step=_kill_at(17))
    assert not os.path.exists(tmp_path / "b" / "model" / run_id)
    resumed = train(interrupted.replace(resume=run_id), evaluator=evaluator)
    a, b = saved_weights(str(full_dir)), saved_weights(resumed["model_dir"])
    assert a and a.keys() == b.keys()
    assert any(k.startswith("model/bi_encoder/") for k in a) and any(k.startswith("model/cross_encoder/") for k in a)
    for key in a:
        np.testing.assert_allclose(a[key], b[key], atol=1e-6, err_msg=key)
    full_record = json.load(open(full_dir / "config.json"))
    assert full_record["weights_fingerprint"] == resumed["weights_fingerprint"]
    # The same selections: each phase ended with the weights of the same scored step.
    resumed_record = json.load(open(os.path.join(resumed["model_dir"], "config.json")))
    assert [p["metrics"]["best_step"] for p in resumed_record["phases"]] == [
        p["metrics"]["best_step"] for p in full_record["phases"]]
    # A finished phase keeps its final weights, not its optimizer checkpoints.
    assert not [f for f in os.listdir(phases / "cycle1_cross_a") if f.startswith("ckpt-")]


def test_mutual_distillation_averages_both_models_labels_and_ensembles_the_cross_encoders(tmp_path):
    import tensorflow as tf

    from common.models.sources.names import minilm_dir
    from common.training.loop import RunPaths
    from common.training.phases import PhaseRunner
    from common.training.runs import RunContext
    from fixtures import write_hf_bert_dir
    from trans_encoder_tf.method import pair_fn_of, _Models

    second = write_hf_bert_dir(str(tmp_path / "hf"), os.path.join(minilm_dir(), "vocab.txt"), seed=3)
    config = registry.build_config("trans_encoder", {
        **smoke(str(tmp_path / "data")), "mutual_init": second, "train_epochs": 1, "train_steps_per_epoch": 2,
        "eval_each_epoch": False, "artifacts_dir": str(tmp_path / "a")})
    result = train(config)
    record = json.load(open(os.path.join(result["model_dir"], "config.json")))
    assert [p["phase"] for p in record["phases"]] == ["cycle1_cross_a", "cycle1_cross_b", "cycle1_bi_a",
                                                      "cycle1_bi_b"]
    phases = tmp_path / "a" / "ckpt" / result["run_id"] / "phases"
    labels = {p: np.load(phases / p / "labels.npy") for p in os.listdir(phases)}
    # Each model of a kind learns from the same labels: the mean of both models of the other kind.
    np.testing.assert_array_equal(labels["cycle1_cross_a"], labels["cycle1_cross_b"])
    np.testing.assert_array_equal(labels["cycle1_bi_a"], labels["cycle1_bi_b"])
    assert not np.allclose(labels["cycle1_cross_a"], labels["cycle1_bi_a"])
    assert record["encoder"]["spec"] == "random_tiny" and {"bi_encoder_b", "cross_encoder_b"} <= {
        k.split("/")[1] for k in saved_weights(result["model_dir"])}
    # The cross/ SavedModel scores a pair with the mean of the two cross-encoders.
    context = RunContext(config, tf.distribute.get_strategy(),
                         RunPaths.for_run(str(tmp_path / "a"), result["run_id"]), chief=True)
    models = _Models(context, PhaseRunner(context))
    first, second_s = tf.constant(["a man runs .", "a dog"]), tf.constant(["a person runs .", "stocks"])
    expected = np.mean([pair_fn_of(models.get("cross", m, 1))(first, second_s) for m in "ab"], axis=0)
    served = tf.saved_model.load(os.path.join(result["model_dir"], "cross"))(first, second_s)
    np.testing.assert_allclose(served, expected, atol=1e-5)


def test_a_trained_run_id_is_a_start_encoder(tmp_path):
    import tensorflow as tf

    from common import artifacts
    from common.models.encoder import EncoderConfig, build_encoder
    import dataclasses

    from common.training.publishing import write_weights
    from trans_encoder_tf.method import build_start_encoder

    encoder = build_encoder(EncoderConfig(spec="random_tiny", max_seq_len=16, seed=5))
    for v in encoder.trainable_variables:
        v.assign(v + 0.01)  # a "trained" encoder: no longer the seeded tiny one
    run_dir = tmp_path / "artifacts" / "model" / "20261122-000000"
    write_weights(tf.train.Checkpoint(model=tf.train.Checkpoint(encoder=encoder)), str(run_dir))
    artifacts.write_json(str(run_dir / "config.json"), {"encoder": dataclasses.asdict(encoder.encoder_config)})
    config = registry.build_config("trans_encoder", {**smoke(str(tmp_path / "data")),
                                                     "artifacts_dir": str(tmp_path / "artifacts")})
    loaded = build_start_encoder("20261122-000000", 16, config)
    sentences = tf.constant(["a man runs .", "stocks fell"])
    np.testing.assert_allclose(loaded.embed_strings(sentences), encoder.embed_strings(sentences), atol=1e-6)
