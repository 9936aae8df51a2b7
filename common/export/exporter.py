"""`export_model(ExportConfig)`: any `--model` in any format of `common.models.formats.FORMATS`
(a sentence-transformers folder, a TFLite model or an embedding SavedModel with the tokenizer
inside, a TF-Hub-format BERT). `export.py` is its command line.

Every export is written to a temporary folder and renamed into place
(`common.artifacts.write_atomically`), never over an existing one, with an
`export.json` that records what was exported, how, and with which packages.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, Optional, Tuple

import tensorflow as tf

from common import artifacts
from common.errors import UserError
from common.export.saved_model import package_versions
from common.loading.resolve import resolve_encoder
from common.models.formats import FORMATS
from common.models.sources.names import canonical_spec

EXPORT_RECORD = "export.json"


def quantizations() -> Tuple[str, ...]:
    """Every `--quantize` value some format takes, in the table's order."""
    return tuple(dict.fromkeys(q for module in FORMATS.values() for q in module.QUANTIZATIONS))


@dataclasses.dataclass(frozen=True)
class ExportConfig:
    """What to export, where, and how.

    Attributes:
        model: str. Any `--model` value with a Keras BERT encoder behind it: a run ID,
            a run's directory, a Hugging Face BERT folder or an encoder spec.
        format: str. A name in `common.models.formats.FORMATS` ("sentence-transformers", "tflite",
            "savedmodel", "tfhub-bert").
        out: str. The folder to write (local or `gs://`); it must not exist.
        quantize: str. Weights: "none" (float32), or one the format takes ("int8": TFLite's
            and ONNX Runtime's dynamic quantization, OpenVINO's NNCF static quantization).
            Defaults to "none".
        calibration_data: str or None. A text file, one sentence a line, that a calibrated
            quantization (the format's `CALIBRATED`: OpenVINO int8) computes its activation ranges
            on; None: the format's default sample (STS-B train under `data_path`).
        data_path: str. The data root holding SentEval's `downstream/` (the default calibration
            sentences). Defaults to "data".
        st_backends: tuple of str. Runtimes whose copies of the model the export carries in
            subfolders (the format's `BACKENDS`: "onnx", "openvino" for sentence-transformers).
            Defaults to none.
        artifacts_dir: str. Where run IDs are looked up. Defaults to "artifacts".
        model_location: str. "local" or "gcs". Defaults to "local".
        gcs_bucket: str or None. Bucket for `model_location="gcs"`.
        max_seq_len: int or None. Truncation length; None: the model's own maximum
            (`SentenceEncoder.model_max_seq_len`), not the length a run trained at.
    """

    model: str
    format: str
    out: str
    quantize: str = "none"
    artifacts_dir: str = "artifacts"
    model_location: str = "local"
    gcs_bucket: Optional[str] = None
    max_seq_len: Optional[int] = None
    calibration_data: Optional[str] = None
    data_path: str = "data"
    st_backends: Tuple[str, ...] = ()

    def validate(self) -> None:
        """Raises UserError for settings that cannot go together, before anything is loaded."""
        if self.format not in FORMATS:
            raise UserError(f"--format must be one of {', '.join(FORMATS)}; got {self.format!r}.")
        if self.quantize not in quantizations():
            raise UserError(f"--quantize must be one of {', '.join(quantizations())}; got {self.quantize!r}.")
        if self.quantize not in FORMATS[self.format].QUANTIZATIONS:
            takers = [name for name, module in FORMATS.items() if self.quantize in module.QUANTIZATIONS]
            raise UserError(f"--quantize={self.quantize} applies to --format={'/'.join(takers)} only; a "
                             f"{self.format} export keeps the float32 weights.")
        module = FORMATS[self.format]
        if self.calibration_data and self.quantize not in module.CALIBRATED:
            takers = [f"--format={name} --quantize={'/'.join(m.CALIBRATED)}" for name, m in FORMATS.items()
                      if m.CALIBRATED]
            raise UserError(f"--calibration_data applies to {', '.join(takers)} only (calibrated quantization); "
                             f"--format={self.format} --quantize={self.quantize} reads no calibration sentences: "
                             "drop --calibration_data.")
        unknown = [b for b in self.st_backends if b not in module.BACKENDS]
        if unknown:
            takers = {name: m.BACKENDS for name, m in FORMATS.items() if m.BACKENDS}
            offered = "; ".join(f"--format={name}: {', '.join(b)}" for name, b in takers.items())
            raise UserError(f"--st_backends={','.join(self.st_backends)}: --format={self.format} carries "
                             f"{', '.join(module.BACKENDS) or 'no other runtime'}; the backends offered are {offered}.")
        if not self.out:
            raise UserError("--out is required: the folder to write the export to (it must not exist).")
        if self.max_seq_len is not None and self.max_seq_len < 2:
            raise UserError(f"--max_seq_len must be >= 2 ([CLS] and [SEP]), got {self.max_seq_len}.")


def export_model(config: ExportConfig) -> Dict[str, Any]:
    """Writes `config.model` to `config.out` in `config.format`.

    Returns:
        The export record (also written as `export.json`): source, format, the
        encoder's settings, package versions and each file's size in bytes.

    Raises:
        UserError: for invalid settings, an existing `out`, or a model that has no
            encoder to export (see `resolve_encoder`).
        FileNotFoundError: for a run ID or path that does not exist.

    Example:
        >>> import tempfile
        >>> from common import SentenceModel
        >>> from common.export import ExportConfig, export_model
        >>> with tempfile.TemporaryDirectory() as tmp:  # e.g. model="latest", your last train.py run
        ...     record = export_model(ExportConfig(model="random_tiny", format="sentence-transformers",
        ...                                        out=f"{tmp}/my-model"))
        ...     embeddings = SentenceModel(f"{tmp}/my-model").encode(["A man plays a guitar."])
        >>> record["format"], embeddings.shape
        ('sentence-transformers', (1, 32))
    """
    config.validate()
    if tf.io.gfile.exists(config.out):
        raise UserError(f"--out={config.out} exists; an export is never written over an existing folder: "
                         "give a new --out.")
    artifacts.require_bucket(config.out)
    encoder = resolve_encoder(config.model, config.artifacts_dir, config.model_location, config.gcs_bucket,
                              config.max_seq_len)
    positions = getattr(getattr(encoder.backbone, "config", None), "max_position_embeddings", None)
    if positions is not None and encoder.encoder_config.max_seq_len > positions:
        # keras-hub pads to max_seq_length, and any sentence that long would index past the position table.
        raise UserError(f"{config.model}: max_seq_len {encoder.encoder_config.max_seq_len} exceeds the model's "
                         f"{positions} position embeddings; give --max_seq_len={positions} or less.")
    module = FORMATS[config.format]
    write_format = module.writer(encoder, config)  # converted before anything is written

    record: Dict[str, Any] = {
        "source": canonical_spec(config.model),  # a spec under its new name
        "format": config.format,
        "encoder": dataclasses.asdict(encoder.encoder_config),
        "packages": package_versions(),
        **module.record(config),
    }

    def write(tmp: str) -> None:
        write_format(tmp)
        record["files"] = _file_sizes(tmp)
        artifacts.write_json(artifacts.join(tmp, EXPORT_RECORD), record)

    artifacts.write_atomically(config.out, write)
    return record


def _file_sizes(root: str) -> Dict[str, int]:
    """Size in bytes of every file under `root`, by path relative to it."""
    sizes = {}
    for directory, _, files in tf.io.gfile.walk(root):
        for name in files:
            path = artifacts.join(directory, name)
            relative = path[len(root.rstrip("/")) + 1:]
            if not relative.startswith("."):  # write_atomically's owner record
                sizes[relative] = tf.io.gfile.stat(path).length
    return dict(sorted(sizes.items()))
