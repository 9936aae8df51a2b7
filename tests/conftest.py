"""Shared fixtures. DATA_PATH (set by `make test`) points at the data root."""

from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

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
    from common.models.encoder import EncoderConfig, build_encoder

    return build_encoder(EncoderConfig(spec="random_tiny", max_seq_len=32, seed=1))


@pytest.fixture(scope="session")
def minilm_encoder():
    from common.models.encoder import EncoderConfig, build_encoder

    return build_encoder(EncoderConfig(spec="minilm"))
