"""Shared fixtures, the order in which test files start, and the graph optimizer of the test processes.
DATA_PATH (set by `make test`) points at the data root."""

from __future__ import annotations

import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest  # noqa: E402

# Recorded seconds per test file (tools/file_seconds.py writes it from a JUnit report).
FILE_SECONDS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "file_seconds.json")


def longest_files_first(items, seconds, default):
    """`items` regrouped by file, the files longest first by `seconds` ({path from the repository root: s},
    `default` for a file it does not list), each file's tests in their own order.

    Workers take whole files in this order (`make test` passes xdist's `--no-loadscope-reorder`), so the
    long files start while the short ones are left to fill the end: longest processing time first, which
    keeps one worker from running a long file alone after the other is done. Only the order changes.
    """
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    files: dict = {}
    for item in items:
        files.setdefault(os.path.relpath(str(item.path), root).replace(os.sep, "/"), []).append(item)
    order = sorted(files, key=lambda name: -seconds.get(name, default))  # stable: equal files keep their order
    return [item for name in order for item in files[name]]


def pytest_collection_modifyitems(config, items):
    from tools.file_seconds import DEFAULT_SECONDS

    with open(FILE_SECONDS, encoding="utf-8") as f:
        seconds = json.load(f)
    items[:] = longest_files_first(items, seconds, DEFAULT_SECONDS)


# Grappler, TensorFlow's graph optimizer, rewrites each graph when it first runs. A test's graphs (a tiny
# model's few training steps, one export) run a handful of times, so the rewrite costs more than it saves: a
# tiny PAUSE run takes about a quarter less without it. The test processes run without it, except for the tests
# of real models (marked `large`, or using the MiniLM fixture) and those of a rewrite's effect (marked
# `grappler`, e.g. oneDNN's fused bf16 feed-forward), which run their graphs as users do; the
# scripts a test starts as subprocesses (each script's real entry point) keep TensorFlow's default too.
def set_graph_optimizer(on: bool) -> None:
    """Turns Grappler on (TensorFlow's default) or off for the graphs this process runs from now on."""
    import tensorflow as tf

    off = tf.config.optimizer.get_experimental_options().get("disable_meta_optimizer", False)
    if off == on:  # only on a change: setting the option resets the call options of every function
        tf.config.optimizer.set_experimental_options({"disable_meta_optimizer": not on})


def runs_graphs_as_users_do(item) -> bool:
    """Whether the test `item` runs its graphs as users do: a real model's (marked `large`, or using the MiniLM
    fixture), or graphs whose Grappler rewrite it checks (marked `grappler`)."""
    return (any(item.get_closest_marker(name) is not None for name in ("large", "grappler"))
            or "minilm_encoder" in getattr(item, "fixturenames", ()))


def pytest_runtest_setup(item):
    # Before the test's fixtures are set up, so a module's fixture runs its graphs as its first test does.
    set_graph_optimizer(runs_graphs_as_users_do(item))


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
