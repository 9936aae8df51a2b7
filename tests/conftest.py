"""Shared fixtures. DATA_PATH (set by `make test`) points at the data root."""

from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest  # noqa: E402


def pytest_configure(config):
    # The test processes run their graphs without Grappler, TensorFlow's graph rewriter: a test traces a model
    # and runs each graph a few times, so the rewrite costs more than it saves (about 6 % of the suite's time).
    # The rewrite keeps a graph's results; the scripts the tests start in their own processes (train.py,
    # test_sts.py, export.py, ...) run with TensorFlow's defaults, Grappler included, as users run them.
    if not hasattr(config, "workerinput") and getattr(config.option, "dist", "no") != "no" and config.option.tx:
        return  # pytest-xdist's controller runs no test
    import tensorflow as tf

    tf.config.optimizer.set_experimental_options({"disable_meta_optimizer": True})


@pytest.fixture
def grappler():
    """Grappler back on for one test: for a test of what its rewrite gives (the fused kernels)."""
    import tensorflow as tf

    before = tf.config.optimizer.get_experimental_options()
    tf.config.optimizer.set_experimental_options({"disable_meta_optimizer": False})
    yield
    tf.config.optimizer.set_experimental_options({"disable_meta_optimizer": before.get("disable_meta_optimizer", False)})


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
