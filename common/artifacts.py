"""Run IDs, the artifacts layout, atomic writes, and where a run ID's model lives.

Layout under an artifacts root (local or `gs://`), keyed by timestamp IDs:
    model/<ID>/       final model (embedding SavedModel, config.json, ...)
    log/<ID>/         TensorBoard logs
    ckpt/<ID>/        training checkpoints
    test/             evaluation results (sts_<name>.json, ...)
"""

from __future__ import annotations

import datetime
import json
import os
import re
import socket
import uuid
from typing import Any, Callable, Dict, List, Optional

import tensorflow as tf
from absl import logging

from common.errors import UserError

RUN_ID_FORMAT = "%Y%m%d-%H%M%S"
RUN_ID_PATTERN = re.compile(r"^\d{8}-\d{6}$")
# Where `--model=<run ID>` looks: the local artifacts root, or gs://<bucket>/model/<ID>.
MODEL_LOCATIONS = ("local", "gcs")
LATEST = "latest"
_RESERVATION_DIR = "ids"


def join(*parts: str) -> str:
    """Joins path parts with "/" (works for local paths and `gs://` URLs)."""
    return "/".join([parts[0].rstrip("/")] + [p.strip("/") for p in parts[1:]])


def bucket_of(path: str) -> Optional[str]:
    """The bucket URL of a `gs://` path (`gs://<bucket>`), or None for any other path."""
    if not path.startswith("gs://"):
        return None
    return "gs://" + path[len("gs://"):].split("/", 1)[0]


def require_bucket(path: str) -> None:
    """Raises FileNotFoundError, naming the bucket, if `path` is in a `gs://` bucket that does not exist.

    TensorFlow's `tf.io.gfile.makedirs` never returns for a path in a missing
    bucket (it asks for the bucket again and again), so every directory an artifact
    or a run writes is checked here first. A bucket these credentials may write to
    but not list (HTTP 403 on the bucket itself) is let through.
    """
    bucket = bucket_of(path)
    if bucket is None:
        return
    try:
        found = tf.io.gfile.exists(bucket)
    except tf.errors.PermissionDeniedError:
        return
    if not found:
        raise FileNotFoundError(f"{path}: the bucket {bucket} does not exist (or these credentials cannot see it).")


def makedirs(path: str) -> None:
    """`tf.io.gfile.makedirs`, which fails with one clear error on a missing `gs://` bucket instead of hanging."""
    require_bucket(path)
    tf.io.gfile.makedirs(path)


def model_dir(artifacts_dir: str, run_id: str) -> str:
    return join(artifacts_dir, "model", run_id)


def log_dir(artifacts_dir: str, run_id: str) -> str:
    return join(artifacts_dir, "log", run_id)


def checkpoint_dir(artifacts_dir: str, run_id: str) -> str:
    return join(artifacts_dir, "ckpt", run_id)


def test_dir(artifacts_dir: str) -> str:
    return join(artifacts_dir, "test")


def _id_taken(artifacts_dir: str, run_id: str) -> bool:
    return any(tf.io.gfile.exists(join(artifacts_dir, sub, run_id)) for sub in ("model", "log", "ckpt"))


def new_run_id(artifacts_dir: str, now: Optional[datetime.datetime] = None, max_tries: int = 3600) -> str:
    """Reserves a fresh `YYYYMMDD-HHMMSS` ID under `artifacts_dir`.

    The reservation is an atomic `mkdir` of `<artifacts_dir>/ids/<ID>` (locally),
    so two runs started in the same second get distinct IDs: the later one takes
    the next free second. An ID used by any existing model, log or checkpoint is
    never handed out again.

    Args:
        artifacts_dir: str. Artifacts root.
        now: datetime. Start time; defaults to the current local time.
        max_tries: int. Seconds to advance before giving up.

    Returns:
        The reserved ID.
    """
    now = now or datetime.datetime.now()
    reservations = join(artifacts_dir, _RESERVATION_DIR)
    makedirs(reservations)
    for offset in range(max_tries):
        run_id = (now + datetime.timedelta(seconds=offset)).strftime(RUN_ID_FORMAT)
        if _id_taken(artifacts_dir, run_id):
            continue
        path = join(reservations, run_id)
        if "://" in path:
            # Object stores have no atomic mkdir; the existence check above is the best we can do.
            if tf.io.gfile.exists(path):
                continue
            makedirs(path)
            return run_id
        try:
            os.mkdir(path)
            return run_id
        except FileExistsError:
            continue
    raise RuntimeError(f"No free run ID in {artifacts_dir} within {max_tries} s of {now}.")


class ArtifactWriteError(OSError):
    """An artifact could not be written (disk full, read-only or unreachable
    destination); nothing half-written was left behind."""


TMP_PREFIX = ".tmp-"
_OWNER_FILE = ".owner.json"


def write_atomically(final_dir: str, write: Callable[[str], None]) -> str:
    """Calls `write(tmp_dir)` on a new temporary directory and renames it to `final_dir`.

    The temporary directory `.tmp-<name>-<hex>` beside `final_dir` holds an
    owner record (host and process) while it is written, so that a later start
    can tell the leftover of a killed writer (`stale_temporaries`) from one in
    progress. A failure removes it; only a kill -9 can leave it behind.

    Raises:
        FileExistsError: if `final_dir` exists (artifacts are never overwritten).
        ArtifactWriteError: if writing or renaming failed (disk full, read-only
            or unreachable destination); the temporary directory is removed.
    """
    if tf.io.gfile.exists(final_dir):
        raise FileExistsError(f"Refusing to overwrite {final_dir}")
    parent, name = final_dir.rstrip("/").rsplit("/", 1) if "/" in final_dir else (".", final_dir)
    tmp = join(parent, f"{TMP_PREFIX}{name}-{uuid.uuid4().hex[:8]}")
    try:
        makedirs(tmp)
        owner = join(tmp, _OWNER_FILE)
        with tf.io.gfile.GFile(owner, "w") as f:
            json.dump({"host": socket.gethostname(), "pid": os.getpid()}, f)
        write(tmp)
        tf.io.gfile.remove(owner)
        tf.io.gfile.rename(tmp, final_dir, overwrite=False)
    except BaseException as e:
        try:
            if tf.io.gfile.exists(tmp):
                tf.io.gfile.rmtree(tmp)
        except (OSError, tf.errors.OpError) as cleanup:
            logging.warning("Could not remove %s after a failed write: %s", tmp, cleanup)
        if isinstance(e, (OSError, tf.errors.OpError)) and not isinstance(e, FileExistsError):
            reason = getattr(e, "message", None) or str(e)
            raise ArtifactWriteError(f"Could not write {final_dir}: {' '.join(reason.split())}; nothing was "
                                     "left half-written.") from e
        raise
    return final_dir


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def stale_temporaries(parent: str, remove: bool = True) -> List[str]:
    """The `.tmp-*` directories under `parent` left by writers that were killed.

    One whose owner record names this host and a process that no longer runs is
    removed (with `remove`) and logged; one of another host, or without an owner
    record (a writer killed before it wrote one), is only reported, since it may
    still be in progress elsewhere.

    Returns:
        The paths of the stale directories that remain (reported, not removed).
    """
    try:
        names = tf.io.gfile.listdir(parent) if tf.io.gfile.isdir(parent) else []
    except tf.errors.OpError:
        return []
    left = []
    for name in sorted(n.rstrip("/") for n in names if n.startswith(TMP_PREFIX)):
        path = join(parent, name)
        owner_file = join(path, _OWNER_FILE)
        owner = None
        if tf.io.gfile.exists(owner_file):
            try:
                with tf.io.gfile.GFile(owner_file) as f:
                    owner = json.load(f)
            except (ValueError, tf.errors.OpError):
                owner = None
        if owner and owner.get("host") == socket.gethostname() and not _pid_alive(int(owner.get("pid", -1))):
            if remove:
                tf.io.gfile.rmtree(path)
                logging.warning("Removed %s: the temporary directory of a writer (process %s) that was killed "
                                "while publishing.", path, owner.get("pid"))
                continue
        elif owner and owner.get("host") == socket.gethostname():
            continue  # its writer is still running
        logging.warning("Found %s, a temporary directory of a writer %s; if no run is publishing there, delete "
                        "it.", path, f"on host {owner.get('host')}" if owner else "killed before it recorded itself")
        left.append(path)
    return left


def write_json(path: str, obj: Dict[str, Any]) -> None:
    """Writes JSON through a temporary file and a rename."""
    tmp = f"{path}.tmp-{uuid.uuid4().hex[:8]}"
    with tf.io.gfile.GFile(tmp, "w") as f:
        f.write(json.dumps(obj, indent=2, sort_keys=False) + "\n")
    tf.io.gfile.rename(tmp, path, overwrite=True)


def latest_run_id(artifacts_dir: str) -> str:
    """The newest run ID under `<artifacts_dir>/model/`."""
    root = join(artifacts_dir, "model")
    ids = sorted(d.rstrip("/") for d in tf.io.gfile.listdir(root)) if tf.io.gfile.exists(root) else []
    ids = [i for i in ids if RUN_ID_PATTERN.match(i)]
    if not ids:
        raise FileNotFoundError(f"--model=latest: no trained model under {root}.")
    return ids[-1]


def model_path(model: str, artifacts_dir: str = "artifacts", model_location: str = "local",
               gcs_bucket: Optional[str] = None) -> Optional[str]:
    """The directory a `--model` value names, or None for an encoder spec.

    "latest" is the newest run ID under `<artifacts_dir>/model/`. A run ID maps
    to `<artifacts_dir>/model/<ID>` (which must exist) or, with
    `model_location="gcs"`, to `gs://<gcs_bucket>/model/<ID>` as the original
    code did; a `gs://` URL or an existing local path is returned as is.

    Raises:
        UserError: for an unknown location, an empty model or a missing bucket.
        FileNotFoundError: for a local run ID that does not exist.
    """
    if model_location not in MODEL_LOCATIONS:
        raise UserError(f"--model_location must be one of {MODEL_LOCATIONS}, got {model_location!r}.")
    if not model:
        raise UserError("--model is empty; give a run ID, a path or an encoder spec.")
    if model == LATEST:
        model = latest_run_id(artifacts_dir)
    if RUN_ID_PATTERN.match(model):
        if model_location == "gcs":
            if not gcs_bucket:
                raise UserError("--model_location=gcs needs --gcs_bucket.")
            return f"gs://{gcs_bucket.removeprefix('gs://').strip('/')}/model/{model}"
        path = model_dir(artifacts_dir, model)
        if not tf.io.gfile.exists(path):
            root = join(artifacts_dir, "model")
            known = sorted(d.rstrip("/") for d in tf.io.gfile.listdir(root)) if tf.io.gfile.exists(root) else []
            known = [k for k in known if RUN_ID_PATTERN.match(k)]
            raise FileNotFoundError(f"No model with ID {model} in {root}; IDs there: {known[-10:] or 'none'}.")
        return path
    if model.startswith("gs://") or os.path.exists(model):
        return model
    return None
