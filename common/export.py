"""Export a sentence encoder as a SavedModel: 1-D tf.string batch -> embeddings.

The SavedModel needs only `tensorflow` and `tensorflow_text` (for the tokenizer
ops) to load: `tf.saved_model.load(path).signatures["serving_default"](sentences=...)`
or `hub.load(path)(sentences)`. Only the raw tf.Variables are tracked, so the
weights are stored once (Keras' ExportArchive stores MiniLM's twice: 176 MB vs 90 MB).
"""

from __future__ import annotations

import tensorflow as tf

from common.encoder import SentenceEncoder

SERVING_INPUT = "sentences"
SERVING_OUTPUT = "embeddings"


def export_encoder(encoder: SentenceEncoder, path: str) -> None:
    """Writes the encoder's embedding SavedModel to `path` (which must not exist).

    Args:
        encoder: SentenceEncoder.
        path: str. Local or `gs://` directory.
    """
    if tf.io.gfile.exists(path):
        raise FileExistsError(f"Refusing to overwrite an existing SavedModel: {path}")
    root = tf.Module()
    # The encoder is captured by the closure below, not tracked as an attribute:
    # tracking the Keras object would store every weight a second time.
    root.encoder_variables = [v.value for v in encoder.weights]

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name=SERVING_INPUT)])
    def serve(sentences):
        return {SERVING_OUTPUT: encoder(sentences, training=False)["embedding"]}

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def call(sentences):
        return encoder(sentences, training=False)["embedding"]

    root.serve = serve
    root.__call__ = call
    tf.saved_model.save(root, path, signatures={"serving_default": serve})
