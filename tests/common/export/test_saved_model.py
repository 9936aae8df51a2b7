import importlib.metadata
import json
import os
import re
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf
from packaging.requirements import Requirement

from common.models.bert import BertBackbone
from common.models.bert_config import BertConfig
from common.models.sources.names import TINY_BERT, minilm_dir
from common.models.encoder import EncoderConfig, build_encoder
from common.models.sources.fresh import randomize_weights
from common.export.saved_model import export_encoder
from fixtures import write_tfhub_bert

SENTENCES = ["A man is playing a guitar.", "", "Crème brûlée, isn't it?"]

# Runs in a fresh interpreter that imports nothing of this project.
LOADER = """
import json, sys
import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401  registers the tokenizer ops
path, sentences = sys.argv[1], json.loads(sys.argv[2])
loaded = tf.saved_model.load(path)
out = loaded.signatures["serving_default"](sentences=tf.constant(sentences))["embeddings"]
called = loaded(tf.constant(sentences))
assert not [m for m in sys.modules if m.split(".")[0] in ("common", "keras_hub")], "project code was imported"
np.save(sys.argv[3], np.stack([out.numpy(), called.numpy()]))
"""


def test_exported_savedmodel_loads_in_a_fresh_process(tiny_encoder, tmp_path):
    path = str(tmp_path / "embedding")
    export_encoder(tiny_encoder, path)
    result = str(tmp_path / "out.npy")
    subprocess.run([sys.executable, "-c", LOADER, path, json.dumps(SENTENCES), result], check=True,
                   cwd=str(tmp_path), env={**os.environ, "PYTHONPATH": ""})
    signature_out, call_out = np.load(result)
    want = tiny_encoder(tf.constant(SENTENCES))["embedding"].numpy()
    np.testing.assert_allclose(signature_out, want, atol=1e-6)
    np.testing.assert_allclose(call_out, want, atol=1e-6)


def test_export_stores_weights_once_and_hub_load_accepts_it(tiny_encoder, tmp_path):
    import tensorflow_hub as hub

    path = str(tmp_path / "embedding")
    export_encoder(tiny_encoder, path)
    weight_bytes = sum(int(np.prod(v.shape)) * 4 for v in tiny_encoder.weights)
    stored = sum(os.path.getsize(os.path.join(path, "variables", f))
                 for f in os.listdir(os.path.join(path, "variables")))
    assert weight_bytes * 0.99 < stored < weight_bytes * 1.2
    # `variables` and `trainable_variables` list the same tf.Variables: one checkpoint entry each,
    # beside the one of the length the SavedModel truncates at.
    stored_names = [n for n, _ in tf.train.list_variables(os.path.join(path, "variables", "variables"))
                    if n.endswith("VARIABLE_VALUE")]
    assert len(stored_names) == len(tiny_encoder.variables) + 1
    assert "max_seq_len/.ATTRIBUTES/VARIABLE_VALUE" in stored_names
    assert int(tf.saved_model.load(path).max_seq_len.numpy()) == tiny_encoder.tokenizer.config.max_seq_len == 32
    out = hub.load(path)(tf.constant(SENTENCES)).numpy()
    np.testing.assert_allclose(out, tiny_encoder(tf.constant(SENTENCES))["embedding"].numpy(), atol=1e-6)


# The distributions a user of the exported model needs; each brings what it declares.
CLEAN_DISTRIBUTIONS = ("tensorflow", "tensorflow-text", "tensorflow-hub", "tf-keras")

# Runs with only CLEAN_DISTRIBUTIONS (and their dependencies) importable: fine-tunes the
# SavedModel through hub.KerasLayer inside a tf_keras model, as a TF Hub user would.
FINE_TUNER = """
import json, sys, sysconfig
site, path, sentences, result = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]
sys.path.insert(0, site)
import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401  registers the tokenizer ops
import tensorflow_hub as hub
import tf_keras

x = tf.constant(sentences)
loaded = hub.load(path)
arrays = {
    "call": loaded(x).numpy(),
    "call_eval": loaded(x, training=False).numpy(),
    "serving": loaded.signatures["serving_default"](sentences=x)["embeddings"].numpy(),
    "call_train_1": loaded(x, training=True).numpy(),
    "call_train_2": loaded(x, training=True).numpy(),
}
counts = {"variables": len(loaded.variables), "trainable_variables": len(loaded.trainable_variables),
          "regularization_losses": len(loaded.regularization_losses)}
for trainable in (True, False):
    layer = hub.KerasLayer(path, trainable=trainable)
    inputs = tf_keras.Input(shape=[], dtype=tf.string)
    model = tf_keras.Model(inputs, tf_keras.layers.Dense(1)(layer(inputs)))
    model.compile(optimizer=tf_keras.optimizers.Adam(1e-3), loss="mse")
    arrays[f"before_{trainable}"] = layer(x, training=False).numpy()
    model.train_on_batch(x, np.ones([len(sentences), 1], np.float32))
    arrays[f"after_{trainable}"] = layer(x, training=False).numpy()
    counts[f"layer_trainable_weights_{trainable}"] = len(layer.trainable_weights)
    counts[f"layer_weights_{trainable}"] = len(layer.weights)
allowed = (site, sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["platstdlib"])
# AutoGraph writes the functions it converts to temporary modules: generated, not installed, code.
counts["outside"] = sorted(name for name, module in list(sys.modules.items())
                           if getattr(module, "__file__", None) and not module.__file__.startswith(allowed)
                           and not name.startswith("__autograph_generated_file"))
np.savez(result + ".npz", **arrays)
with open(result + ".json", "w") as f:
    json.dump(counts, f)
"""


def _clean_site(directory, distributions=CLEAN_DISTRIBUTIONS) -> str:
    """A site folder of links to `distributions` and everything they declare (nothing else):
    with `python -I -S` and only this folder added to sys.path, a fresh interpreter sees what
    `pip install <distributions>` would give a user, and no code of this project."""
    def canonical(name):
        return re.sub(r"[-_.]+", "-", name).lower()

    os.makedirs(directory)
    pending, seen = list(distributions), set()
    while pending:
        name = canonical(pending.pop())
        if name in seen:
            continue
        seen.add(name)
        dist = importlib.metadata.distribution(name)
        for requirement in map(Requirement, dist.requires or ()):
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                pending.append(requirement.name)
        for file in dist.files or ():
            top = file.parts[0]
            link = os.path.join(directory, top)
            # Scripts (../bin) and .pth hooks are not importable code; __pycache__ is shared.
            if top in ("..", "__pycache__") or top.endswith(".pth") or os.path.lexists(link):
                continue
            os.symlink(str(dist.locate_file(top)), link)
    return directory


def test_exported_savedmodel_fine_tunes_through_hub_keras_layer_in_a_clean_environment(tiny_encoder, tmp_path):
    path = str(tmp_path / "embedding")
    export_encoder(tiny_encoder, path)
    site = _clean_site(str(tmp_path / "site"))
    result = str(tmp_path / "result")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    subprocess.run([sys.executable, "-I", "-S", "-c", FINE_TUNER, site, path, json.dumps(SENTENCES), result],
                   check=True, cwd=str(tmp_path), env=env)
    counts = json.load(open(result + ".json"))
    arrays = dict(np.load(result + ".npz"))
    assert counts["outside"] == []  # nothing but the clean site and the standard library was imported

    n_trainable = len(tiny_encoder.trainable_variables)
    assert counts["trainable_variables"] == n_trainable > 0
    assert counts["variables"] == len(tiny_encoder.variables)
    assert counts["regularization_losses"] == 0
    # Inference: deterministic, `training` defaults to False, equal to the signature and the encoder.
    np.testing.assert_array_equal(arrays["call"], arrays["call_eval"])
    np.testing.assert_array_equal(arrays["call"], arrays["serving"])
    np.testing.assert_allclose(arrays["call"], tiny_encoder(tf.constant(SENTENCES))["embedding"].numpy(), atol=1e-6)
    # Training: dropout, a fresh mask each call.
    assert np.abs(arrays["call_train_1"] - arrays["call_train_2"]).max() > 1e-3
    assert np.abs(arrays["call_train_1"] - arrays["call"]).max() > 1e-3

    assert counts["layer_trainable_weights_True"] == n_trainable
    assert counts["layer_weights_True"] == len(tiny_encoder.variables)
    np.testing.assert_array_equal(arrays["before_True"], arrays["call"])
    assert np.abs(arrays["after_True"] - arrays["before_True"]).max() > 1e-4  # one Adam step moved the encoder
    assert counts["layer_trainable_weights_False"] == 0
    np.testing.assert_array_equal(arrays["after_False"], arrays["before_False"])


def test_export_refuses_to_overwrite(tiny_encoder, tmp_path):
    (tmp_path / "embedding").mkdir()
    import pytest

    with pytest.raises(FileExistsError):
        export_encoder(tiny_encoder, str(tmp_path / "embedding"))


def _tiny_backbone(seed):
    vocab_size = sum(1 for _ in open(os.path.join(minilm_dir(), "vocab.txt"), encoding="utf-8"))
    backbone = BertBackbone(BertConfig(vocab_size=vocab_size, **TINY_BERT))
    randomize_weights(backbone, seed)
    return backbone


def test_tfhub_format_encoder_loads_and_trains_through_the_spec_path(tmp_path):
    backbone = _tiny_backbone(seed=3)
    hub_dir = write_tfhub_bert(str(tmp_path / "hub_bert"), backbone, os.path.join(minilm_dir(), "vocab.txt"))
    encoder = build_encoder(EncoderConfig(spec=hub_dir, max_seq_len=32))
    reference = build_encoder(EncoderConfig(spec="random_tiny", max_seq_len=32))
    reference.backbone.set_weights(backbone.get_weights())
    texts = tf.constant(SENTENCES)
    before = encoder(texts)["embedding"].numpy()
    np.testing.assert_allclose(before, reference(texts)["embedding"].numpy(), atol=1e-5)

    hub_vars = encoder.backbone.module.trainable_variables
    assert len(encoder.trainable_variables) == len(hub_vars) > 0
    snapshot = [v.numpy().copy() for v in hub_vars]
    optimizer = keras.optimizers.Adam(1e-2)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(encoder(texts, training=True)["embedding"] ** 2)
    grads = tape.gradient(loss, encoder.trainable_variables)
    assert all(g is not None for g in grads)
    optimizer.apply_gradients(zip(grads, encoder.trainable_variables))
    changed = sum(not np.allclose(a, v.numpy()) for a, v in zip(snapshot, hub_vars))
    assert changed > len(hub_vars) // 2
    assert not np.allclose(before, encoder(texts)["embedding"].numpy())


class _WithoutPairHead(keras.Model):
    """A pair model that only has a `call` (no `pair_head`)."""

    def __init__(self, inner):
        super().__init__(name="without_pair_head")
        self.inner = inner

    def call(self, inputs, training=False):
        return self.inner(inputs, training=training)


@pytest.mark.parametrize("hook,traces_expected", [(True, 1), (False, 2)])
def test_pair_savedmodel_serves_the_models_outputs_over_one_trace_of_the_encoder(tiny_encoder, tmp_path, monkeypatch,
                                                                               hook, traces_expected):
    """PAUSE's `siamese/` SavedModel scores a pair as the model does (training=False), and traces the
    encoder once for both sides; a model without `pair_head` is served through its own call."""
    from common.export.saved_model import export_pair_model
    from pause_tf.model import SiameseModel

    model = SiameseModel(tiny_encoder, hidden_units=8)
    if not hook:
        model = _WithoutPairHead(model)
    pairs = {"premise": tf.constant(["a man plays a guitar .", "", "a dog runs ."]),
             "hypothesis": tf.constant(["music is played .", "someone sleeps .", "an animal moves ."])}
    expected = model(pairs, training=False)
    traces = []
    encoder_call = type(tiny_encoder).call
    monkeypatch.setattr(type(tiny_encoder), "call",
                        lambda self, *a, **k: traces.append(1) or encoder_call(self, *a, **k))
    path = str(tmp_path / "siamese")
    export_pair_model(model, path, SiameseModel.pair_outputs)
    assert len(traces) == traces_expected
    served = tf.saved_model.load(path).signatures["serving_default"](sentence1=pairs["premise"],
                                                                      sentence2=pairs["hypothesis"])
    assert sorted(served) == sorted(SiameseModel.pair_outputs)
    for key in SiameseModel.pair_outputs:
        np.testing.assert_allclose(served[key].numpy(), expected[key].numpy(), rtol=1e-5, atol=1e-6)
