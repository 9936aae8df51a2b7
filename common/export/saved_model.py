"""The SavedModels a run publishes: a sentence encoder's (1-D tf.string batch -> embeddings),
a sentence-pair model's and a cross-encoder's ((sentence1, sentence2) -> scores).

The embedding SavedModel is also a format of `export.py` (`--format=savedmodel`): its writer,
its reader and what it holds are `common.models.formats.saved_model`. Every one of these needs
only `tensorflow` and `tensorflow_text` (for the tokenizer ops) to load.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, Optional, Tuple

import tensorflow as tf

from common import artifacts
from common.models.encoder import SentenceEncoder, inference_encoder
from common.models.formats.saved_model import save_embedding_model
# The interface these SavedModels are read by (signature names, the recorded length).
from common.models.sources.exported import CROSS_INPUTS, CROSS_OUTPUT, LENGTH_ATTRIBUTE, SERVING_INPUT, SERVING_OUTPUT

__all__ = ["CROSS_INPUTS", "CROSS_OUTPUT", "LENGTH_ATTRIBUTE", "SERVING_INPUT", "SERVING_OUTPUT",
           "export_cross_encoder", "export_encoder", "export_pair_model", "package_versions", "save_encoder_artifact"]


def export_encoder(encoder: SentenceEncoder, path: str) -> None:
    """Writes the encoder's embedding SavedModel to `path` (which must not exist).

    The SavedModel truncates where `encoder`'s tokenizer does; to publish an encoder
    trained at a shorter length, export `inference_encoder(encoder)`.

    Args:
        encoder: SentenceEncoder.
        path: str. Local or `gs://` directory.
    """
    if tf.io.gfile.exists(path):
        raise FileExistsError(f"Refusing to overwrite an existing SavedModel: {path}")
    save_embedding_model(encoder, path)


def package_versions() -> Dict[str, str]:
    """Versions of the packages that determine a model's numbers."""
    from importlib import metadata

    versions = {}
    for name in ("tensorflow", "tensorflow-text", "keras", "keras-hub", "tensorflow-hub", "numpy"):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def save_encoder_artifact(encoder: SentenceEncoder, final_dir: str,
                          config: Optional[Dict[str, Any]] = None) -> str:
    """Writes `final_dir/embedding/` (SavedModel) and `final_dir/config.json`
    into a temporary directory that is renamed to `final_dir` at the end.

    As a run publishes its model: the SavedModel is `inference_encoder(encoder)` (the
    model's own length and dropout), config.json records `encoder.encoder_config`.

    Args:
        encoder: SentenceEncoder.
        final_dir: str. Usually `artifacts/model/<ID>`; must not exist.
        config: dict. Run configuration to record (flags, data fingerprint, ...).

    Returns:
        `final_dir`.
    """

    def write(tmp: str) -> None:
        export_encoder(inference_encoder(encoder), artifacts.join(tmp, "embedding"))
        artifacts.write_json(artifacts.join(tmp, "config.json"), {
            "encoder": dataclasses.asdict(encoder.encoder_config),
            "packages": package_versions(),
            **(config or {}),
        })

    return artifacts.write_atomically(final_dir, write)


def _tokenizer_tables(model) -> list:
    """The hash tables of every encoder tokenizer inside `model` (`ByteLevelBpeTokenizer.lookup_tables`)."""
    tokenizers = {id(m.tokenizer): m.tokenizer for m in model._flatten_layers() if isinstance(m, SentenceEncoder)}
    return [t for tok in tokenizers.values() for t in getattr(tok, "lookup_tables", [])]


def export_pair_model(model, path: str, outputs: Tuple[str, ...] = ("logits", "cos_sim", "angular_sim")) -> None:
    """Writes a sentence-pair SavedModel: (sentence1, sentence2) string batches -> `outputs`.

    Args:
        model: keras.Model taking {"premise": strings, "hypothesis": strings}. With an `encoder`
            (SentenceEncoder) and `pair_head(u, v)` (its outputs from the two sides' pooled embeddings),
            both sides are served through one trace of the encoder.
        path: str. Directory that must not exist.
        outputs: tuple of str. Keys of the model's output dict to serve.
    """
    if tf.io.gfile.exists(path):
        raise FileExistsError(f"Refusing to overwrite an existing SavedModel: {path}")
    root = tf.Module()
    root.model_variables = [v.value for v in model.variables]
    root.tokenizer_tables = _tokenizer_tables(model)
    spec = [tf.TensorSpec([None], tf.string, name="sentence1"), tf.TensorSpec([None], tf.string, name="sentence2")]

    # Both sides go through one trace of the encoder (the model's `call` would trace it once per side).
    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def embed(sentences):
        return model.encoder(sentences, training=False)["pooled"]

    @tf.function(input_signature=spec)
    def serve(sentence1, sentence2):
        if hasattr(model, "pair_head"):
            out = model.pair_head(embed(sentence1), embed(sentence2))
        else:  # a model without the hook is served through its own call (the encoder traced once per side)
            out = model({"premise": sentence1, "hypothesis": sentence2}, training=False)
        return {k: out[k] for k in outputs}

    root.serve = serve
    tf.saved_model.save(root, path, signatures={"serving_default": serve})


def export_cross_encoder(models, path: str) -> None:
    """Writes a cross-encoder SavedModel: (sentence1, sentence2) string batches -> `score` [batch].

    With several models (mutual distillation) the score is the mean of their
    scores (the ensemble the paper evaluates). Needs only TensorFlow and
    tensorflow_text to load: `tf.saved_model.load(path).signatures["serving_default"](
    sentence1=..., sentence2=...)["score"]`, or `loaded(sentence1, sentence2)`.

    Args:
        models: sequence of keras.Model. Each maps {"sentence1", "sentence2"}
            string batches to a dict with "score" (e.g. trans_encoder_tf's CrossEncoderModel).
        path: str. Directory that must not exist.
    """
    if tf.io.gfile.exists(path):
        raise FileExistsError(f"Refusing to overwrite an existing SavedModel: {path}")
    models = list(models)
    root = tf.Module()
    root.model_variables = [v.value for m in models for v in m.variables]
    root.tokenizer_tables = [t for m in models for t in _tokenizer_tables(m)]
    spec = [tf.TensorSpec([None], tf.string, name=name) for name in CROSS_INPUTS]

    @tf.function(input_signature=spec)
    def call(sentence1, sentence2):
        inputs = {"sentence1": sentence1, "sentence2": sentence2}
        return tf.add_n([m(inputs, training=False)["score"] for m in models]) / len(models)  # [B]

    # The signature calls the trace above rather than tracing the models again.
    @tf.function(input_signature=spec)
    def serve(sentence1, sentence2):
        return {CROSS_OUTPUT: call(sentence1, sentence2)}

    @tf.function(input_signature=spec)
    def token_counts(sentence1, sentence2):
        return models[0].encoder.tokenizer.pair_token_counts(sentence1, sentence2)

    root.serve = serve
    root.__call__ = call
    # Not a signature: what `score_sentence_pairs` sorts batches by (tokens before padding).
    root.token_counts = token_counts
    tf.saved_model.save(root, path, signatures={"serving_default": serve})
