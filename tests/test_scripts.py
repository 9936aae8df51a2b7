"""Smoke tests of every script's `main`, through the real command line."""

import json
import os
import subprocess
import sys

import pytest

from fixtures import write_sts_root

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(args, cwd):
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": ROOT})


def test_test_sts_scores_a_spec_and_writes_results(tmp_path):
    data = write_sts_root(str(tmp_path / "data"))
    proc = _run([os.path.join(ROOT, "test_sts.py"), "--model=tiny", f"--data_path={data}",
                 f"--artifacts_dir={tmp_path / 'artifacts'}", "--max_seq_len=32"], cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "sts12" in proc.stdout and "avg" in proc.stdout
    result = json.load(open(tmp_path / "artifacts" / "test" / "sts_tiny.json"))
    assert result["model"] == "tiny"
    assert set(result) >= {"sts12", "sts13", "sts14", "sts15", "sts16", "stsb", "sickr", "avg", "seconds"}
    assert set(result["sts12"]) >= {"all", "mean", "wmean", "subsets"}
    txt = (tmp_path / "artifacts" / "test" / "sts_tiny.txt").read_text()
    assert txt.startswith("sts12=")


def test_test_sts_rejects_bad_input_clearly(tmp_path):
    proc = _run([os.path.join(ROOT, "test_sts.py"), "--model=nonsense", f"--data_path={tmp_path}"], cwd=str(tmp_path))
    assert proc.returncode != 0 and "Valid forms" in proc.stderr
    proc = _run([os.path.join(ROOT, "test_sts.py"), "--model=tiny", f"--data_path={tmp_path / 'nope'}"],
                cwd=str(tmp_path))
    assert proc.returncode != 0 and "README.md, section 'Data'" in proc.stderr
    proc = _run([os.path.join(ROOT, "test_sts.py"), "stray"], cwd=str(tmp_path))
    assert proc.returncode != 0 and "Unexpected arguments" in proc.stderr


LOAD_PLAIN = """
import json, sys
import tensorflow as tf
import tensorflow_text  # noqa: F401
emb = tf.saved_model.load(sys.argv[1] + "/embedding").signatures["serving_default"]
pair = tf.saved_model.load(sys.argv[1] + "/siamese").signatures["serving_default"]
e = emb(sentences=tf.constant(["a man plays a guitar .", ""]))["embeddings"]
p = pair(sentence1=tf.constant(["a man plays a guitar ."]), sentence2=tf.constant(["music is played ."]))
print(json.dumps({"emb": e.shape.as_list(), "logits": p["logits"].shape.as_list(),
                  "cos": float(p["cos_sim"][0]), "angular": float(p["angular_sim"][0])}))
"""


def test_train_then_load_plainly_then_score(tmp_path):
    from fixtures import write_senteval_snli

    data = write_sts_root(str(tmp_path / "data"))
    write_senteval_snli(data, "dev", n=60)
    artifacts = tmp_path / "artifacts"
    proc = _run([os.path.join(ROOT, "train.py"), "--model=tiny", "--train_data=senteval:dev", f"--data_path={data}",
                 "--train_epochs=1", "--train_steps_per_epoch=3", "--batch_size=8", "--max_seq_len=16",
                 "--pos_sample_prec=5", f"--artifacts_dir={artifacts}"], cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    run_id = next(line.split(": ")[1] for line in proc.stdout.splitlines() if line.startswith("run ID:"))
    assert f"test_sts.py --model={run_id}" in proc.stdout
    model_dir = artifacts / "model" / run_id
    config = json.load(open(model_dir / "config.json"))
    assert config["config"]["pos_sample_prec"] == 5 and config["data"]["pairs"] == 60
    assert {"tensorflow", "keras"} <= set(config["packages"]) and config["data"]["fingerprint"]
    assert os.path.isdir(artifacts / "log" / run_id) and os.listdir(artifacts / "log" / run_id)
    plain = subprocess.run([sys.executable, "-c", LOAD_PLAIN, str(model_dir)], capture_output=True, text=True,
                           cwd=str(tmp_path), env={**os.environ, "PYTHONPATH": ""})
    assert plain.returncode == 0, plain.stderr[-2000:]
    shapes = json.loads(plain.stdout.strip().splitlines()[-1])
    assert shapes["emb"] == [2, 32] and shapes["logits"] == [1, 3] and -1 <= shapes["cos"] <= 1
    score = _run([os.path.join(ROOT, "test_sts.py"), f"--model={run_id}", f"--data_path={data}",
                  f"--artifacts_dir={artifacts}"], cwd=str(tmp_path))
    assert score.returncode == 0, score.stderr[-2000:]
    assert json.load(open(artifacts / "test" / f"sts_{run_id}.json"))["model"] == run_id


def test_declutr_train_then_score(tmp_path):
    data = write_sts_root(str(tmp_path / "data"))
    docs = tmp_path / "docs.txt"
    docs.write_text("\n".join(" ".join(f"word{d}_{i % 37}" for i in range(300)) for d in range(6)) + "\n")
    artifacts = tmp_path / "artifacts"
    proc = _run([os.path.join(ROOT, "train.py"), "--method=declutr", "--model=tiny", f"--train_data={docs}",
                 f"--data_path={data}", "--train_epochs=1", "--train_steps_per_epoch=3", "--batch_size=2",
                 "--max_seq_len=32", "--min_span_len=8", "--max_span_len=32", f"--artifacts_dir={artifacts}"],
                cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    run_id = next(line.split(": ")[1] for line in proc.stdout.splitlines() if line.startswith("run ID:"))
    config = json.load(open(artifacts / "model" / run_id / "config.json"))
    assert config["method"] == "declutr" and config["data"]["documents"] == 6
    assert config["config"]["min_span_len"] == 8 and config["metrics"]["mlm"] > 0
    score = _run([os.path.join(ROOT, "test_sts.py"), f"--model={run_id}", f"--data_path={data}",
                  f"--artifacts_dir={artifacts}"], cwd=str(tmp_path))
    assert score.returncode == 0, score.stderr[-2000:]
    assert json.load(open(artifacts / "test" / f"sts_{run_id}.json"))["model"] == run_id


@pytest.mark.parametrize("mode", ["unsup", "sup"])
def test_simcse_train_then_score(tmp_path, mode):
    from fixtures import write_senteval_snli

    data = write_sts_root(str(tmp_path / "data"))
    write_senteval_snli(data, "dev", n=60)
    artifacts = tmp_path / "artifacts"
    proc = _run([os.path.join(ROOT, "train.py"), "--method=simcse", f"--simcse_mode={mode}", "--model=tiny",
                 "--train_data=senteval:dev", f"--data_path={data}", "--batch_size=8", "--train_steps_per_epoch=2",
                 "--train_epochs=1", f"--artifacts_dir={artifacts}"], cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    run_id = next(line.split(": ")[1] for line in proc.stdout.splitlines() if line.startswith("run ID:"))
    config = json.load(open(artifacts / "model" / run_id / "config.json"))
    assert config["method"] == "simcse" and config["config"]["mode"] == mode
    assert config["config"]["max_seq_len"] == 32 and config["encoder"]["pooling"] == "cls"
    score = _run([os.path.join(ROOT, "test_sts.py"), f"--model={run_id}", f"--data_path={data}",
                  f"--artifacts_dir={artifacts}"], cwd=str(tmp_path))
    assert score.returncode == 0, score.stderr[-2000:]
