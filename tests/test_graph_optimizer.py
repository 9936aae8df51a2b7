"""The test processes' graph optimizer (tests/conftest.py): off for the tiny models' tests, TensorFlow's default
(on) for the tests of real models, set before each test's fixtures."""

import pytest
import tensorflow as tf


def _grappler_on() -> bool:
    return not tf.config.optimizer.get_experimental_options().get("disable_meta_optimizer", False)


def test_a_tiny_models_test_runs_its_graphs_without_grappler():
    assert not _grappler_on()


@pytest.mark.large
def test_a_test_marked_large_runs_its_graphs_as_users_do():
    assert _grappler_on()


def test_a_test_on_the_minilm_fixture_counts_as_a_real_models_test(request):
    from conftest import runs_graphs_as_users_do

    assert runs_graphs_as_users_do(request.node) is False
    item = type("Item", (), {"get_closest_marker": lambda self, name: None, "fixturenames": ["minilm_encoder"]})()
    assert runs_graphs_as_users_do(item)


def test_set_graph_optimizer_sets_tensorflows_option_both_ways():
    from conftest import set_graph_optimizer

    try:
        set_graph_optimizer(True)
        assert _grappler_on()
        set_graph_optimizer(False)
        assert not _grappler_on()
    finally:
        set_graph_optimizer(False)


@pytest.mark.grappler
def test_a_test_of_a_rewrites_effect_runs_its_graphs_with_grappler():
    assert _grappler_on()
