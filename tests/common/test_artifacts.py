import datetime
import json
import os

import pytest

from common import artifacts
from common.models.export import save_encoder_artifact

NOW = datetime.datetime(2026, 11, 22, 10, 15, 0)


def test_run_ids_in_the_same_second_are_distinct(tmp_path):
    root = str(tmp_path)
    first = artifacts.new_run_id(root, now=NOW)
    second = artifacts.new_run_id(root, now=NOW)
    assert first == "20261122-101500" and second == "20261122-101501"


def test_an_existing_model_id_is_never_reused(tmp_path):
    os.makedirs(tmp_path / "model" / "20261122-101500")
    os.makedirs(tmp_path / "log" / "20261122-101501")
    assert artifacts.new_run_id(str(tmp_path), now=NOW) == "20261122-101502"


def test_write_atomically_leaves_nothing_on_failure_and_never_overwrites(tmp_path):
    final = str(tmp_path / "model" / "X")

    def broken(tmp):
        os.makedirs(tmp)
        open(os.path.join(tmp, "half"), "w").write("partial")
        raise RuntimeError("killed")

    with pytest.raises(RuntimeError):
        artifacts.write_atomically(final, broken)
    assert os.listdir(tmp_path / "model") == []
    artifacts.write_atomically(final, lambda tmp: os.makedirs(tmp))
    assert os.path.isdir(final)
    with pytest.raises(FileExistsError):
        artifacts.write_atomically(final, lambda tmp: os.makedirs(tmp))


def test_saved_artifact_has_embedding_model_and_config(tiny_encoder, tmp_path):
    run_id = artifacts.new_run_id(str(tmp_path), now=NOW)
    final = save_encoder_artifact(tiny_encoder, artifacts.model_dir(str(tmp_path), run_id), {"method": "none"})
    assert os.path.exists(os.path.join(final, "embedding", "saved_model.pb"))
    config = json.load(open(os.path.join(final, "config.json")))
    assert config["encoder"]["spec"] == "tiny" and config["method"] == "none"
    assert "tensorflow" in config["packages"]
    assert [p for p in os.listdir(tmp_path / "model") if p.startswith(".tmp")] == []
