"""The embedding SavedModel a run publishes: 1-D strings -> embeddings, tokenizer inside.

What `export.py --format=savedmodel` writes, and what a run's `embedding/` is. It needs only
`tensorflow` and `tensorflow_text` (for the tokenizer ops) to load:

    import tensorflow as tf, tensorflow_text
    loaded = tf.saved_model.load(path)
    vectors = loaded.signatures["serving_default"](sentences=tf.constant(["A sentence."]))["embeddings"]

(or `loaded(sentences)`, or `hub.load(path)(sentences)`). Only the raw tf.Variables are tracked,
so the weights are stored once (Keras' ExportArchive stores MiniLM's twice: 176 MB vs 90 MB).

It is also a Reusable SavedModel in TF Hub's format
(https://www.tensorflow.org/hub/reusable_saved_models): `__call__(sentences, training=False)`
(dropout when `training=True`), `variables`, `trainable_variables` and `regularization_losses`
on the root, so `hub.KerasLayer(path, trainable=True)` fine-tunes the encoder inside a tf_keras
model. Its graph computes in float32 whatever precision the encoder was trained in (the
variables are float32 in every precision): a portable model whose scores do not depend on how
it was trained. It truncates at the encoder's length and records it in `max_seq_len` (an int32
variable, as TF Hub's BERTs record `do_lower_case`; not among `variables`). A run publishes its
encoder at the model's own maximum, not at the length it trained at
(`common.models.encoder.inference_encoder`); `export.py` at `--max_seq_len`, else the same.

The toolkit reads it back (`--model=<folder>`) as it is: a traced graph that computes as it
was exported, at its own length and in float32; it cannot be rebuilt as a `SentenceEncoder` nor
exported again (export the model it came from: `export.json` records it as `source`).
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional

import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2

from common import artifacts, compat
from common.models.encoder import SentenceEncoder, float32_encoder, inference_encoder
from common.models.sources.exported import (LENGTH_ATTRIBUTE, SERVING_INPUT, SERVING_OUTPUT, embedding_saved_model,
                                            exported_length, is_saved_model_dir, refuse_length, refuse_precision)

DESCRIPTION = ("the embedding SavedModel a run publishes (strings -> embeddings, tokenizer inside; "
               "TensorFlow and tensorflow-text only)")
QUANTIZATIONS = ("none",)
CALIBRATED: tuple = ()  # no --quantize value here reads calibration sentences
BACKENDS: tuple = ()  # it carries no other runtime's copy (--st_backends)
SIGNATURE = "serving_default"
# Where a run's directory keeps it (`common.loading.resolve.EMBEDDING_SUBDIR`).
_RUN_SUBDIR = "embedding"


def save_embedding_model(encoder: SentenceEncoder, path: str) -> None:
    """Writes `encoder`'s embedding SavedModel into `path` (created where it does not exist).

    The SavedModel truncates where `encoder`'s tokenizer does; to publish an encoder trained
    at a shorter length, save `inference_encoder(encoder)`.

    Args:
        encoder: SentenceEncoder.
        path: str. Local or `gs://` folder.
    """
    encoder = float32_encoder(encoder)
    # tf.Module's base class: tf.Module computes `variables` and `trainable_variables` as
    # read-only properties, which are not saved (tf.train.Checkpoint, as in TF Hub's own
    # examples, would add a `save_counter` variable).
    root = compat.auto_trackable()
    # The encoder is captured by the closures below, not tracked as an attribute:
    # tracking the Keras object would store every weight a second time. Both lists
    # hold the same tf.Variable objects, which a SavedModel stores once.
    root.variables = [v.value for v in encoder.variables]  # weights and dropout seed states
    root.trainable_variables = [v.value for v in encoder.trainable_variables]
    # The encoders have no weight regularizers (weight decay is the optimizer's).
    root.regularization_losses = []
    # What a caller asking for a length is compared with (`common.loading.resolve`).
    setattr(root, LENGTH_ATTRIBUTE, tf.Variable(encoder.tokenizer.config.max_seq_len, trainable=False,
                                                dtype=tf.int32, name=LENGTH_ATTRIBUTE))
    # A byte-level BPE tokenizer looks its merges and vocabulary up in hash tables, which the
    # SavedModel must track to restore (WordPiece keeps its vocabulary in constants).
    root.tokenizer_tables = list(getattr(encoder.tokenizer, "lookup_tables", []))

    @tf.function
    def call(sentences, training=False):
        return encoder(sentences, training=training)["embedding"]

    # One trace per value of the Python bool `training`, which is what hub.KerasLayer passes.
    for training in (False, True):
        compat.trace_for_saving(call, tf.TensorSpec([None], tf.string, name="sentences"), training=training)

    # The signature calls the inference trace above rather than tracing the encoder again.
    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name=SERVING_INPUT)])
    def serve(sentences):
        return {SERVING_OUTPUT: call(sentences, training=False)}

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def token_counts(sentences):
        return encoder.token_counts(sentences)

    root.serve = serve
    root.__call__ = call
    # Not a signature: what `embed_sentences` sorts batches by (tokens before padding).
    root.token_counts = token_counts
    tf.saved_model.save(root, path, signatures={SIGNATURE: serve})


def serves_sentences(path: str) -> bool:
    """Whether the SavedModel in `path` has this format's signature: `sentences` (tf.string) ->
    `embeddings`. Reads the graph's description only, not its variables."""
    model = saved_model_pb2.SavedModel()
    with tf.io.gfile.GFile(artifacts.join(path, "saved_model.pb"), "rb") as f:
        model.ParseFromString(f.read())
    for graph in model.meta_graphs:
        signature = graph.signature_def.get(SIGNATURE)
        if (signature is not None and SERVING_INPUT in signature.inputs and SERVING_OUTPUT in signature.outputs
                and signature.inputs[SERVING_INPUT].dtype == tf.string.as_datatype_enum):
            return True
    return False


# === The format's row (`common.models.formats`) ===

def writer(encoder: SentenceEncoder, settings: Any) -> Callable[[str], None]:
    """What writes `encoder`'s embedding SavedModel into a folder, as a run publishes it
    (`inference_encoder`: float32, the architecture's dropout), at the export's length."""
    used = inference_encoder(encoder, encoder.encoder_config.max_seq_len)
    return lambda folder: save_embedding_model(used, folder)


def record(settings: Any) -> Dict[str, Any]:
    """What `export.json` records of it: the interface, for a reader that does not know the format."""
    return {"interface": f"{SIGNATURE}: {SERVING_INPUT} (1-D tf.string) -> {SERVING_OUTPUT} [batch, dim]; "
                         "__call__(sentences, training=False); needs tensorflow and tensorflow-text"}


def detect(path: str) -> Optional[str]:
    """The embedding SavedModel `path` names (the folder itself, or a run's `embedding/` in it), else None."""
    for candidate in (path, artifacts.join(path, _RUN_SUBDIR)):
        if is_saved_model_dir(candidate) and serves_sentences(candidate):
            return candidate
    return None


def read(location: str, max_seq_len: Optional[int], precision: str) -> Callable:
    """The embedding function of the SavedModel at `location`, which computes as it was exported.

    Raises:
        UserError: for a mixed precision, or a `max_seq_len` other than the one it records.
    """
    refuse_precision(location, precision)
    embed_fn, loaded = embedding_saved_model(location)
    refuse_length(location, max_seq_len, exported_length(loaded))
    return embed_fn
