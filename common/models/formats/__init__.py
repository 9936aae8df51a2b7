"""Every format `export.py` writes, one module per format, and the table that lists them.

| --format | what it writes | module |
| --- | --- | --- |
| sentence-transformers | a Hugging Face BERT folder with sentence-transformers modules | `sentence_transformers` |
| tflite | one TFLite model, tokenizer inside | `tflite` |
| savedmodel | the embedding SavedModel a run publishes: strings -> embeddings, tokenizer inside | `saved_model` |
| tfhub-bert | a BERT backbone as a SavedModel with TF Hub's BERT encoder interface | `tfhub_bert` |
| onnx | one ONNX graph, token ids -> pooled, normalised embeddings, tokenizer files beside it | `onnx` |
| openvino | an OpenVINO model, token ids -> pooled, normalised embeddings, tokenizer files beside it | `openvino` |

Each module is one row of `FORMATS` and holds the format's writer, its reader and how it is
recognised (keras-hub's table of `convert_<arch>` modules). It defines:

- `DESCRIPTION`: str. What it writes (`export.py --format`'s help).
- `QUANTIZATIONS`: tuple of str. The `--quantize` values it takes; "none" keeps float32 weights.
- `CALIBRATED`: tuple of str. The `--quantize` values that read calibration sentences
  (`--calibration_data`); empty for a format that reads none.
- `BACKENDS`: tuple of str. Other runtimes' copies of the model it can carry in subfolders
  (`--st_backends`); empty for a format that carries none.
- `writer(encoder, settings) -> write(folder)`: refuses (UserError) an encoder it cannot
  write, converts it, and returns what writes its files into a folder, so that a failed
  conversion writes nothing. `settings` is the export's `common.export.ExportConfig`.
- `record(settings) -> dict`: what `export.json` records of it beyond the common entries.
- `detect(path) -> str or None`: the file or folder of this format that a `--model` path names.
- `read(location, max_seq_len, precision)`: what `--model=<location>` embeds with: a
  `SentenceEncoder`, rebuilt at any length and precision, or an embedding function
  (1-D strings -> [batch, dim]) that computes as it was exported and refuses the others.

`common.export.export_model` writes through the table, `common.loading.resolve` reads
through it; neither names a format.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

from common.models.formats import onnx, openvino, saved_model, sentence_transformers, tfhub_bert, tflite

# --format's choices in this order; `find` tries the detectors in it too. savedmodel's detector reads
# the serving signature, tfhub-bert's only looks for saved_model.pb and assets/vocab.txt: the more
# particular one goes first, so an embedding SavedModel holding a vocab.txt asset stays one. onnx and
# openvino look for their own files beside a tokenizer; a sentence-transformers folder that carries
# `onnx/` and `openvino/` subfolders is still read as one (its detector goes first).
FORMATS: Dict[str, Any] = {
    "sentence-transformers": sentence_transformers,
    "tflite": tflite,
    "savedmodel": saved_model,
    "tfhub-bert": tfhub_bert,
    "onnx": onnx,
    "openvino": openvino,
}


def find(path: str) -> Optional[Tuple[Any, str]]:
    """The first format in `FORMATS` that recognises `path`: (its module, the file or folder it reads)."""
    for module in FORMATS.values():
        location = module.detect(path)
        if location is not None:
            return module, location
    return None


__all__ = ["FORMATS", "find"]
