"""absl flags shared by the scripts, defined once."""

from __future__ import annotations

from absl import flags

from common.resolve import MODEL_LOCATIONS


def define_data_flags() -> None:
    flags.DEFINE_string("data_path", "data", "Data root in SentEval's layout (<root>/downstream/STS/...).")


def define_artifact_flags() -> None:
    flags.DEFINE_string("artifacts_dir", "artifacts", "Root of model/, log/, ckpt/ and test/.")


def define_model_flags(default_model: str = "minilm") -> None:
    """--model and where to find it, for evaluation scripts."""
    flags.DEFINE_string(
        "model", default_model,
        "Run ID under --artifacts_dir/model, a local or gs:// path, or an encoder spec "
        "(minilm, small, base, a TF Hub URL, a Hugging Face BERT directory).")
    define_artifact_flags()
    flags.DEFINE_enum("model_location", "local", MODEL_LOCATIONS,
                      "Where run IDs live: local (--artifacts_dir) or gcs (gs://<--gcs_bucket>/model/<ID>).")
    flags.DEFINE_string("gcs_bucket", None, "Bucket for --model_location=gcs.")
    flags.DEFINE_integer("max_seq_len", None,
                         "Truncation length for encoder specs; default: the model's own (256 for MiniLM) or 128.")
    flags.DEFINE_integer("batch_size", 128, "Sentences per encoding batch.", lower_bound=1)
