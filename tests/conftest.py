"""Shared fixtures. DATA_PATH (set by `make test`) points at the data root."""

from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# With one xdist worker per core, each worker's TensorFlow (and the scripts it starts, which inherit the
# environment) gets its share of the cores instead of a thread pool as large as the machine: fewer
# threads than the default contend for the cores, which took the suite's training tests about 3 % faster
# on 2 cores (two test files, 2 workers, timed A B A B on an idle machine).
_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 0)
if _WORKERS > 1:
    os.environ.setdefault("TF_NUM_INTRAOP_THREADS", str(max(1, (os.cpu_count() or 1) // _WORKERS)))
    os.environ.setdefault("TF_NUM_INTEROP_THREADS", "1")

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def data_path() -> str:
    """The shared data root; a missing one fails the test (CI must not skip)."""
    path = os.environ.get("DATA_PATH", "")
    if not path or not os.path.isdir(os.path.join(path, "downstream")):
        pytest.fail(f"DATA_PATH={path!r} does not hold downstream/; run `make test DATA_PATH=<data root>`.")
    return path


@pytest.fixture(scope="session")
def tiny_encoder():
    from common.models.encoder import EncoderConfig
    from common.models.sources import build_encoder

    return build_encoder(EncoderConfig(spec="random_tiny", max_seq_len=32, seed=1))


@pytest.fixture(scope="session")
def minilm_encoder():
    from common.models.encoder import EncoderConfig
    from common.models.sources import build_encoder

    return build_encoder(EncoderConfig(spec="minilm"))
