"""Export: every format a model leaves this toolkit in, one module per format.

- `common.export.saved_model`: the SavedModels a run publishes (embedding, sentence-pair,
  cross-encoder), their serving signature names, and `save_encoder_artifact`.
- `common.export.sentence_transformers_folder`: a Hugging Face BERT folder with
  sentence-transformers modules.
- `common.export.tflite`: one TFLite model, tokenizer inside, and `TFLiteEmbedder` to run it.
- `common.export.exporter`: `export_model(ExportConfig)`, what `export.py` runs: the format
  dispatch, the atomic write and the `export.json` record.
"""

from common.export.exporter import EXPORT_RECORD, FORMATS, ExportConfig, export_model
from common.export.saved_model import (export_cross_encoder, export_encoder, export_pair_model, package_versions,
                                       save_encoder_artifact)
from common.export.sentence_transformers_folder import write_sentence_transformers
from common.export.tflite import QUANTIZATIONS, TFLITE_FILE, TFLiteEmbedder, tflite_model

__all__ = ["EXPORT_RECORD", "FORMATS", "QUANTIZATIONS", "TFLITE_FILE", "ExportConfig", "TFLiteEmbedder",
           "export_cross_encoder", "export_encoder", "export_model", "export_pair_model", "package_versions",
           "save_encoder_artifact", "tflite_model", "write_sentence_transformers"]
