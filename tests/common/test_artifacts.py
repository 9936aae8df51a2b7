import datetime
import json
import os

import pytest

from common import artifacts
from common.export.saved_model import save_encoder_artifact

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
        open(os.path.join(tmp, "half"), "w").write("partial")
        raise RuntimeError("killed")

    def complete(tmp):
        open(os.path.join(tmp, "weights"), "w").write("all")

    with pytest.raises(RuntimeError):
        artifacts.write_atomically(final, broken)
    assert os.listdir(tmp_path / "model") == []
    artifacts.write_atomically(final, complete)
    assert sorted(os.listdir(final)) == ["weights"]  # the owner record is not published
    with pytest.raises(FileExistsError):
        artifacts.write_atomically(final, complete)


@pytest.mark.parametrize("errno_, reason", [(28, "No space left on device"), (30, "Read-only file system")])
def test_a_full_or_read_only_disk_during_a_write_leaves_nothing_and_says_so(tmp_path, errno_, reason):
    final = str(tmp_path / "model" / "X")

    def fills_the_disk(tmp):
        open(os.path.join(tmp, "half"), "w").write("partial")
        raise OSError(errno_, reason)

    with pytest.raises(artifacts.ArtifactWriteError, match=f"Could not write .*X: .*{reason}.*nothing was left"):
        artifacts.write_atomically(final, fills_the_disk)
    assert os.listdir(tmp_path / "model") == []


def test_stale_temporaries_of_killed_writers_are_removed_and_others_reported(tmp_path):
    import json
    import socket
    import subprocess
    import sys

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    root = tmp_path / "model"
    for name, owner in ((".tmp-A-1", {"host": socket.gethostname(), "pid": dead.pid}),
                        (".tmp-B-2", {"host": socket.gethostname(), "pid": os.getpid()}),
                        (".tmp-C-3", {"host": "another-host", "pid": 1}),
                        (".tmp-D-4", None)):
        os.makedirs(root / name)
        if owner:
            (root / name / ".owner.json").write_text(json.dumps(owner))
    left = artifacts.stale_temporaries(str(root))
    assert sorted(os.listdir(root)) == [".tmp-B-2", ".tmp-C-3", ".tmp-D-4"]  # A's writer is dead: removed
    assert [os.path.basename(p) for p in left] == [".tmp-C-3", ".tmp-D-4"]  # B's writer still runs


def test_saved_artifact_has_embedding_model_and_config(tiny_encoder, tmp_path):
    run_id = artifacts.new_run_id(str(tmp_path), now=NOW)
    final = save_encoder_artifact(tiny_encoder, artifacts.model_dir(str(tmp_path), run_id), {"method": "none"})
    assert os.path.exists(os.path.join(final, "embedding", "saved_model.pb"))
    config = json.load(open(os.path.join(final, "config.json")))
    assert config["encoder"]["spec"] == "random_tiny" and config["method"] == "none"
    assert "tensorflow" in config["packages"]
    assert [p for p in os.listdir(tmp_path / "model") if p.startswith(".tmp")] == []
