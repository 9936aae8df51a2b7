"""The toolkit's Adam and AdamW (common.training.schedules) take Keras' steps in one fused op per variable."""

import numpy as np
import pytest
import keras
import tensorflow as tf

from common.training.schedules import Adam, AdamW


def _steps(optimizer, steps=5, seed=0):
    """Weights and moments after `steps` updates of three variables (a kernel, a bias, a LayerNorm gamma)."""
    rng = np.random.default_rng(seed)
    variables = [keras.Variable(rng.normal(size=shape).astype("float32"), name=name)
                 for shape, name in (((4, 3), "kernel"), ((3,), "bias"), ((3,), "gamma"))]

    @tf.function
    def step(grads):
        optimizer.apply(grads, variables)

    for _ in range(steps):
        step([tf.constant(rng.normal(size=v.shape).astype("float32")) for v in variables])
    return [v.numpy() for v in variables] + [m.numpy() for m in optimizer.variables[1:]]


@pytest.mark.parametrize("fused,reference", [
    (lambda: Adam(1e-2), lambda: keras.optimizers.Adam(1e-2)),
    (lambda: AdamW(1e-2, weight_decay=0.1), lambda: keras.optimizers.AdamW(1e-2, weight_decay=0.1)),
], ids=["adam", "adamw"])
def test_the_fused_update_takes_keras_steps(fused, reference):
    a, b = fused(), reference()
    for optimizer in (a, b):
        if isinstance(optimizer, keras.optimizers.AdamW):
            optimizer.exclude_from_weight_decay(var_names=["bias", "gamma"])
    got, expected = _steps(a), _steps(b)
    # The same slots under the same names (Keras numbers a second optimizer of a name): checkpoints carry over.
    assert a.name.rstrip("_0123456789") == b.name.rstrip("_0123456789")
    assert [v.path.split("/", 1)[1] for v in a.variables] == [v.path.split("/", 1)[1] for v in b.variables]
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-7)
    assert not np.allclose(got[0], _steps(reference(), steps=0)[0])  # the weights moved


def test_a_schedule_and_amsgrad_still_work():
    schedule = keras.optimizers.schedules.PolynomialDecay(1e-2, 10, 1e-3)
    for fused, reference in ((Adam(schedule), keras.optimizers.Adam(schedule)),
                             (Adam(1e-2, amsgrad=True), keras.optimizers.Adam(1e-2, amsgrad=True))):
        for g, e in zip(_steps(fused), _steps(reference)):
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-7)


def test_a_gathered_tables_gradient_takes_adams_step_on_the_rows_summed_gradient():
    """Rows gathered several times: the step equals the one on the dense (summed) gradient, which
    Keras' own sparse path does not give (tests/common/training/test_sparse_gradients.py)."""
    steps = []
    for densify in (False, True):
        table = keras.Variable(np.ones((4, 2), np.float32))
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.gather(table, [1, 1, 1, 2]) * tf.constant([[1.0, 2.0]] * 3 + [[3.0, -1.0]]))
        grads = tape.gradient(loss, [table.value])
        assert isinstance(grads[0], tf.IndexedSlices)
        Adam(0.1).apply([tf.convert_to_tensor(grads[0])] if densify else grads, [table])
        steps.append(table.numpy())
    np.testing.assert_allclose(steps[0], steps[1], atol=1e-7)
    assert not np.allclose(steps[0][1], 1.0)
