"""A BERT backbone as a TF2 SavedModel with TF Hub's BERT encoder interface.

What `export.py --format=tfhub-bert` writes, and what TF Hub's own BERTs are
(tensorflow/models official/nlp `export_tfhub`): calling the root object on

    {"input_word_ids": int32 [batch, seq], "input_mask": int32 [batch, seq],
     "input_type_ids": int32 [batch, seq]}

(with `training=True` for dropout) returns

    {"sequence_output": [batch, seq, hidden],   the last layer's token vectors
     "pooled_output": [batch, hidden],          BERT's pooler: tanh(dense([CLS] vector))
     "default": [batch, hidden]}                pooled_output, as TF Hub's BERTs name it

The root object also holds `vocab_file` (a `tf.saved_model.Asset`: `assets/vocab.txt`),
`do_lower_case` (a bool tf.Variable) and, as a Reusable SavedModel, `variables`,
`trainable_variables` (every weight of the backbone) and `regularization_losses`, so

    import tensorflow_hub as hub
    encoder = hub.KerasLayer(path, trainable=True)      # tf-keras (Keras 2)
    outputs = encoder({"input_word_ids": ..., "input_mask": ..., "input_type_ids": ...})

fine-tunes it, and `encoder.resolved_object.vocab_file.asset_path` and
`.do_lower_case` build its tokenizer, as the original PAUSE code does. Every backbone
this toolkit builds has BERT's pooler, so pooled_output is always BERT's own; a Hugging
Face checkpoint saved without one (a masked-LM checkpoint such as `BertForMaskedLM`'s)
leaves the pooler at its random initialisation, as `transformers` does, and its
pooled_output is then untrained: use sequence_output there. `encoder_outputs` (every
layer's output) is not written. The graph computes in float32 whatever precision the
model trained in, and drops out at the architecture's rate.

The toolkit reads the folder back (`--model=<folder>`) as a TF-Hub-format BERT
(`common.models.sources.hub`), with the pooling, normalisation and length that `export.json`
records, so it embeds as the model it came from did.
"""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any, Callable, Dict, Optional

import tensorflow as tf

from common import artifacts, compat
from common.errors import UserError
from common.models.bert import BertBackbone
from common.models.encoder import EncoderConfig, SentenceEncoder, build_encoder, inference_encoder
from common.models.sources.exported import is_saved_model_dir
from common.models.tokenization import BertTokenizer

DESCRIPTION = "a BERT backbone as a SavedModel with TF Hub's BERT encoder interface, for hub.KerasLayer"
# Weights stay float32: they are trained further.
QUANTIZATIONS = ("none",)
CALIBRATED: tuple = ()  # no --quantize value here reads calibration sentences
BACKENDS: tuple = ()  # it carries no other runtime's copy (--st_backends)
INPUTS = ("input_word_ids", "input_mask", "input_type_ids")
VOCAB_ASSET = "vocab.txt"
# Where the export's own record is (common.export.EXPORT_RECORD), read for the pooling to embed with.
_RECORD = "export.json"


def save_tfhub_bert(backbone: BertBackbone, vocabulary: list, lowercase: bool, path: str) -> None:
    """Writes `backbone` as a TF-Hub-format BERT encoder SavedModel into `path`.

    Args:
        backbone: BertBackbone. Computes in float32.
        vocabulary: list of str. Its WordPiece vocabulary, by token id.
        lowercase: bool. Whether its tokenizer lower-cases and strips accents.
        path: str. Local or `gs://` folder (it may exist and be empty).
    """
    # Like `common.export.saved_model.export_encoder`: the root tracks the backbone's tf.Variables
    # (not the Keras object, which would store every weight twice) and a tf.function calls it.
    root = compat.auto_trackable()
    root.variables = [v.value for v in backbone.variables]  # weights and dropout seed states
    root.trainable_variables = [v.value for v in backbone.trainable_weights]
    root.regularization_losses = []  # weight decay is the optimizer's
    root.do_lower_case = tf.Variable(lowercase, trainable=False, dtype=tf.bool, name="do_lower_case")

    @tf.function
    def call(inputs, training=False):
        outputs = backbone({"token_ids": inputs["input_word_ids"], "padding_mask": inputs["input_mask"],
                            "segment_ids": inputs["input_type_ids"]}, training=training)
        return {"sequence_output": outputs["sequence_output"], "pooled_output": outputs["pooled_output"],
                "default": outputs["pooled_output"]}

    spec = {name: tf.TensorSpec([None, None], tf.int32, name=name) for name in INPUTS}
    # One trace per value of the Python bool `training`, which is what hub.KerasLayer passes.
    for training in (False, True):
        compat.trace_for_saving(call, spec, training=training)
    root.__call__ = call
    # The asset is copied into the SavedModel's assets/ when it is saved.
    with tempfile.TemporaryDirectory() as scratch:
        vocab_path = os.path.join(scratch, VOCAB_ASSET)
        with open(vocab_path, "w", encoding="utf-8") as f:
            f.writelines(token + "\n" for token in vocabulary)
        root.vocab_file = tf.saved_model.Asset(vocab_path)
        tf.saved_model.save(root, path)


# === The format's row (`common.models.formats`) ===

def writer(encoder: SentenceEncoder, settings: Any) -> Callable[[str], None]:
    """What writes `encoder`'s backbone into a folder (`save_tfhub_bert`).

    Raises:
        UserError: for an encoder the interface cannot hold: a backbone that is itself a TF
            Hub SavedModel, a tokenizer other than WordPiece, or Dense layers after pooling.
    """
    if not isinstance(encoder.backbone, BertBackbone):
        raise UserError(f"{settings.model}: --format=tfhub-bert writes a BERT built by this toolkit; this encoder "
                        f"wraps a TF Hub SavedModel ({getattr(encoder.backbone, 'handle', 'unknown')}) already: "
                        "use it as it is.")
    if not isinstance(encoder.tokenizer, BertTokenizer):
        raise UserError(f"{settings.model}: --format=tfhub-bert holds a WordPiece vocabulary (vocab_file, "
                        f"do_lower_case); this encoder tokenizes with {type(encoder.tokenizer).__name__}: use "
                        "--format=sentence-transformers.")
    if encoder.dense_layers:
        raise UserError(f"{settings.model}: --format=tfhub-bert holds the BERT backbone only; this encoder has "
                        f"{len(encoder.dense_layers)} Dense layer(s) after its pooling, which it would drop: use "
                        "--format=sentence-transformers.")
    used = inference_encoder(encoder)  # float32, the architecture's dropout, the same weights
    tokenizer = encoder.tokenizer
    return lambda folder: save_tfhub_bert(used.backbone, list(tokenizer.vocabulary), tokenizer.config.lowercase,
                                          folder)


def record(settings: Any) -> Dict[str, Any]:
    """What `export.json` records of it: the interface, for a reader that does not know the format."""
    return {"interface": "TF Hub BERT encoder: {" + ", ".join(INPUTS) + "} -> {sequence_output, pooled_output, "
                         "default}; vocab_file, do_lower_case"}


def detect(path: str) -> Optional[str]:
    """`path` where it is a TF-Hub-format BERT SavedModel (saved_model.pb and assets/vocab.txt: this
    format's exports and TF Hub's own BERTs), else None."""
    if is_saved_model_dir(path) and tf.io.gfile.exists(artifacts.join(path, "assets", VOCAB_ASSET)):
        return path
    return None


def read(location: str, max_seq_len: Optional[int], precision: str) -> SentenceEncoder:
    """The encoder of the SavedModel at `location` (trainable through its variables), pooling,
    normalising and truncating (where no `max_seq_len` is asked) as its `export.json` records, so
    that it embeds as the model it was exported from; TF Hub's own BERTs take the defaults."""
    recorded = {}
    record_path = artifacts.join(location, _RECORD)
    if tf.io.gfile.exists(record_path):
        with tf.io.gfile.GFile(record_path) as f:
            recorded = json.load(f).get("encoder", {})
    settings = {k: recorded[k] for k in ("pooling", "normalize") if recorded.get(k) is not None}
    if max_seq_len is None:
        max_seq_len = recorded.get("max_seq_len")
    return build_encoder(EncoderConfig(spec=location, max_seq_len=max_seq_len, precision=precision, **settings))
