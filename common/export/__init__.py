"""Export: every format a model leaves this toolkit in.

- `common.export.saved_model`: the SavedModels a run publishes (embedding, sentence-pair,
  cross-encoder), their serving signature names, and `save_encoder_artifact`.
- `common.export.exporter`: `export_model(ExportConfig)`, what `export.py` runs: the dispatch
  through the table of formats (`common.models.formats.FORMATS`: one module per format with its
  writer, reader and detector), the atomic write and the `export.json` record.
- `common.export.sentence_transformers_folder`, `common.export.tflite`: the names of those two
  formats' modules (`common.models.formats.*`).
"""

from common.export.exporter import EXPORT_RECORD, ExportConfig, export_model, quantizations
from common.export.saved_model import (export_cross_encoder, export_encoder, export_pair_model, package_versions,
                                       save_encoder_artifact)
from common.models.formats import FORMATS
from common.models.formats.sentence_transformers import write_sentence_transformers
from common.models.formats.tflite import QUANTIZATIONS, TFLITE_FILE, TFLiteEmbedder, tflite_model

__all__ = ["EXPORT_RECORD", "FORMATS", "QUANTIZATIONS", "TFLITE_FILE", "ExportConfig", "TFLiteEmbedder",
           "export_cross_encoder", "export_encoder", "export_model", "export_pair_model", "package_versions",
           "quantizations", "save_encoder_artifact", "tflite_model", "write_sentence_transformers"]
