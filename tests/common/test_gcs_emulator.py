"""gs:// through TensorFlow's own file system, against a local Cloud Storage stand-in
(tests/gcs_stand_in.py: gcp-storage-emulator behind a local HTTPS proxy)."""

import datetime
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

import gcs_stand_in
from common import artifacts
from common.loading.resolve import resolve_model
from common.export.saved_model import save_encoder_artifact
from common.training import registry
from common.training.runs import train

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUCKET = "stand-in-bucket"
NOW = datetime.datetime(2026, 11, 22, 10, 15, 0)
SENTENCES = ["a man is playing a guitar .", "the cat sits on the mat ."]


@pytest.fixture(scope="module")
def stand_in_env(tmp_path_factory):
    why = gcs_stand_in.missing()
    if why:
        pytest.fail(f"The gs:// tests need a local Cloud Storage stand-in: {why}.")
    with gcs_stand_in.stand_in(str(tmp_path_factory.mktemp("gcs")), BUCKET) as env:
        yield env


@pytest.fixture
def gcs(stand_in_env, monkeypatch):
    """This process's gs:// traffic goes to the stand-in (TensorFlow reads these variables per request)."""
    for name, value in stand_in_env.items():
        monkeypatch.setenv(name, value)
    return stand_in_env


def _script(args, env, timeout=300):
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **env, "PYTHONPATH": ROOT})


def test_an_artifact_is_published_to_gs_and_loaded_back(gcs, tiny_encoder):
    root = f"gs://{BUCKET}"
    run_id = artifacts.new_run_id(root, now=NOW)
    final = save_encoder_artifact(tiny_encoder, artifacts.model_dir(root, run_id), {"method": "none", "run_id": run_id})
    assert final == f"gs://{BUCKET}/model/{run_id}"
    assert tf.io.gfile.exists(f"{final}/embedding/saved_model.pb")
    assert [n for n in tf.io.gfile.listdir(f"{root}/model") if n.startswith(artifacts.TMP_PREFIX)] == []
    assert not tf.io.gfile.exists(f"{final}/.owner.json")
    with tf.io.gfile.GFile(f"{final}/config.json") as f:
        assert json.load(f)["run_id"] == run_id
    with pytest.raises(FileExistsError):
        save_encoder_artifact(tiny_encoder, final)
    assert artifacts.new_run_id(root, now=NOW) != run_id
    assert artifacts.latest_run_id(root) == run_id

    # Loaded back the way test_sts.py --model=<ID> --model_location=gcs --gcs_bucket=<bucket> does.
    embedder = resolve_model(run_id, model_location="gcs", gcs_bucket=BUCKET)
    assert embedder.name == run_id and embedder.source == f"{final}/embedding"
    expected = tiny_encoder.embed_strings(tf.constant(SENTENCES)).numpy()
    np.testing.assert_allclose(embedder.embed_fn(tf.constant(SENTENCES)).numpy(), expected, rtol=1e-5, atol=1e-5)


def test_a_missing_bucket_or_model_is_a_clear_error_not_a_hang(gcs, tiny_encoder, tmp_path):
    # tf.io.gfile.makedirs alone never returns for a missing bucket; the toolkit checks the bucket first.
    missing = "the bucket gs://no-such-bucket does not exist"
    with pytest.raises(FileNotFoundError, match=missing):
        artifacts.new_run_id("gs://no-such-bucket/artifacts")
    with pytest.raises(artifacts.ArtifactWriteError, match=missing):
        save_encoder_artifact(tiny_encoder, "gs://no-such-bucket/model/X")
    with pytest.raises(FileNotFoundError, match=missing):
        resolve_model("gs://no-such-bucket/model/20261122-101500")
    with pytest.raises(FileNotFoundError, match=f"no such object or directory in gs://{BUCKET}"):
        resolve_model("20200101-000000", model_location="gcs", gcs_bucket=BUCKET)  # no such run
    base = {**registry.get("simcse").smoke(str(tmp_path)), "train_steps_per_epoch": 1, "eval_each_epoch": False}
    for where in ({"artifacts_dir": "gs://no-such-bucket/artifacts"},
                  {"artifacts_dir": str(tmp_path / "artifacts"), "model_dir": "gs://no-such-bucket/model/X"}):
        with pytest.raises(FileNotFoundError, match=missing):
            train(registry.build_config("simcse", {**base, **where}))
    assert not os.path.exists(tmp_path / "artifacts" / "ids") or not os.listdir(tmp_path / "artifacts" / "ids")


def test_scripts_report_a_missing_bucket_in_one_line(stand_in_env, tmp_path):
    proc = _script([os.path.join(ROOT, "test_sts.py"), "--model=gs://no-such-bucket/model/20261122-101500",
                    f"--data_path={tmp_path}"], stand_in_env)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert proc.stderr.strip().splitlines()[-1] == (
        "test_sts.py: gs://no-such-bucket/model/20261122-101500: the bucket gs://no-such-bucket does not exist "
        "(or these credentials cannot see it). (--verbose shows the traceback)")


def test_unreachable_storage_is_one_line(tmp_path):
    # Nothing listens on the proxy's port: every request is refused. TensorFlow retries such a
    # request (10 times by default: 218 s here before the error; once in this test) and then raises AbortedError.
    env = {"https_proxy": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9", "no_proxy": "", "NO_PROXY": "",
           "GOOGLE_AUTH_TOKEN_FOR_TESTING": "stand-in", "NO_GCE_CHECK": "true",
           "GCS_RETRY_CONFIG_MAX_RETRIES": "1", "GCS_RETRY_CONFIG_INIT_DELAY_TIME_US": "1000"}
    proc = _script([os.path.join(ROOT, "test_sts.py"), "--model=gs://some-bucket/model/20261122-101500",
                    f"--data_path={tmp_path}"], env)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("test_sts.py: All 1 retry attempts failed.") and "connect" in last.lower(), last
    assert "gs://some-bucket/model/20261122-101500" in last and last.endswith("(--verbose shows the traceback)")
