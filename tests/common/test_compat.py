"""The private members of keras-hub, Keras and TensorFlow that the toolkit uses behave as relied on.

Each test pins one behaviour of `common.compat` against the libraries' public path, so that an
upgrade that renames or changes a private member fails here. `test_a_changed_private_member_fails_the_pin`
shows the keras-hub pin failing on a simulated change.
"""

import glob
import os
import random
import re

import keras
import numpy as np
import pytest
import tensorflow as tf
from keras_hub.layers import TransformerEncoder

from common import compat

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _encoder_layer(seed=0, hidden=16, heads=2, inner=32):
    keras.utils.set_random_seed(seed)
    layer = TransformerEncoder(intermediate_dim=inner, num_heads=heads, dropout=0.0)
    layer.build((None, None, hidden))
    return layer


def _composed(layer, x, padding_mask):
    """The post-LN encoder layer computed from its parts through compat (what BertLayer does, with
    Keras' own dense calls): equal to the layer's public call while the private members behave."""
    parts = compat.encoder_parts(layer)
    mask = compat.merge_padding_and_attention_mask(x, padding_mask, None)
    mask = compat.attention_mask(parts.attention, x, mask)
    context = compat.attention_context(parts.attention, parts.query(x), parts.key(x), parts.value(x), mask, False)
    y = parts.attention_norm(parts.attention_dropout(parts.attention_output(context)) + x)
    return parts.feedforward_norm(parts.feedforward_dropout(parts.output(parts.intermediate(y))) + y)


def _inputs():
    rng = np.random.default_rng(0)
    x = tf.constant(rng.normal(size=(2, 5, 16)), tf.float32)
    padding_mask = tf.constant([[True] * 5, [True] * 3 + [False] * 2])
    return x, padding_mask


def test_keras_hub_encoder_parts_compose_to_the_public_call():
    layer = _encoder_layer()
    x, padding_mask = _inputs()
    parts = compat.encoder_parts(layer)
    assert compat.attention_heads(parts.attention) == (2, 8)
    assert tuple(parts.query.kernel.shape) == (16, 2, 8) and tuple(parts.attention_output.kernel.shape) == (2, 8, 16)
    assert tuple(parts.intermediate.kernel.shape) == (16, 32) and tuple(parts.output.kernel.shape) == (32, 16)
    expected = layer(x, padding_mask=padding_mask).numpy()
    np.testing.assert_allclose(_composed(layer, x, padding_mask).numpy(), expected, atol=1e-5)


def test_a_changed_private_member_fails_the_pin(monkeypatch):
    """A keras-hub or Keras upgrade that changed, say, the attention core's scaling: simulated here."""
    layer = _encoder_layer()
    x, padding_mask = _inputs()
    attention = compat.encoder_parts(layer).attention
    original = attention._compute_attention

    def changed(query, key, value, *args, **kwargs):
        return original(query * 1.1, key, value, *args, **kwargs)

    monkeypatch.setattr(attention, "_compute_attention", changed)
    expected = layer(x, padding_mask=padding_mask).numpy()  # the public call uses the changed member too
    monkeypatch.undo()
    with pytest.raises(AssertionError):
        np.testing.assert_allclose(_composed(layer, x, padding_mask).numpy(), expected, atol=1e-5)


def test_resetting_keras_global_seed_generator_makes_unseeded_draws_a_function_of_random_seed():
    saved = compat.get_global_seed_generator()
    try:
        draws = []
        for seed in (0, 0, 1):
            random.seed(seed)
            compat.set_global_seed_generator(None)
            draws.append(keras.random.uniform((4,)).numpy())
        np.testing.assert_array_equal(draws[0], draws[1])
        assert not np.allclose(draws[0], draws[2])
        assert compat.get_global_seed_generator() is not None
    finally:
        compat.set_global_seed_generator(saved)


def test_tensorflow_members():
    assert isinstance(compat.strategy_supports_no_merge_call(), bool)
    assert isinstance(compat.onednn_enabled(), bool)
    v = tf.Variable([1.0, 2.0])
    root = compat.auto_trackable()
    root.variables = [v]
    root.f = tf.function(lambda x: x * v, input_signature=[tf.TensorSpec([2], tf.float32)])
    concrete = root.f.get_concrete_function()
    frozen = compat.variables_to_constants()(concrete)
    assert not frozen.graph.variables and frozen(tf.constant([3.0, 3.0]))[0].numpy().tolist() == [3.0, 6.0]


def test_a_function_traced_for_saving_is_saved_without_a_second_trace(tmp_path):
    traces = []

    @tf.function
    def scale(x, training=False):
        traces.append(training)
        return x * (2.0 if training else 1.0)

    def saved_after(trace):
        traces.clear()
        root = compat.auto_trackable()
        root.f = scale
        for training in (False, True):
            trace(scale, tf.TensorSpec([None], tf.float32, name="x"), training=training)
        tf.saved_model.save(root, str(tmp_path / str(len(os.listdir(tmp_path)))))
        return list(traces)

    assert saved_after(compat.trace_for_saving) == [False, True]
    # Traced outside a save, the same function is traced again by it (the check can fail).
    scale = tf.function(scale.python_function)
    assert saved_after(lambda f, *a, **k: f.get_concrete_function(*a, **k)) == [False, True, False, True]
    loaded = tf.saved_model.load(str(tmp_path / "1"))
    assert loaded.f(tf.constant([1.0]), training=True).numpy().tolist() == [2.0]


def test_no_private_member_is_used_outside_compat():
    pattern = re.compile(r"keras_hub\.src|keras\.src|tensorflow\.python|tf\.__internal__")
    sources = [p for p in glob.glob(os.path.join(ROOT, "**", "*.py"), recursive=True)
               if not any(part in p
                          for part in (os.sep + ".venv", os.sep + "tests" + os.sep, os.sep + "build" + os.sep))]
    offenders = [os.path.relpath(p, ROOT) for p in sources
                 if os.path.basename(p) != "compat.py" and pattern.search(open(p, encoding="utf-8").read())]
    assert not offenders, f"Private members used outside common/compat.py: {offenders}"
