import json
import os
import subprocess
import sys

import keras
import numpy as np
import tensorflow as tf

from common.models.bert import BertBackbone, BertConfig
from common.models.encoder import TINY_BERT, EncoderConfig, build_encoder, minilm_dir, randomize_weights
from common.models.export import export_encoder
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
    stored = sum(os.path.getsize(os.path.join(path, "variables", f)) for f in os.listdir(os.path.join(path, "variables")))
    assert weight_bytes * 0.99 < stored < weight_bytes * 1.2
    out = hub.load(path)(tf.constant(SENTENCES)).numpy()
    np.testing.assert_allclose(out, tiny_encoder(tf.constant(SENTENCES))["embedding"].numpy(), atol=1e-6)


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
    reference = build_encoder(EncoderConfig(spec="tiny", max_seq_len=32))
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
