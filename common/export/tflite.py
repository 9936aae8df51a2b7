"""The TFLite format's names where `common.export` users import them; the format, its writer and
its reader are `common.models.formats.tflite`."""

from common.models.formats.tflite import QUANTIZATIONS, TFLITE_FILE, TFLiteEmbedder, is_tflite_file, tflite_model

__all__ = ["QUANTIZATIONS", "TFLITE_FILE", "TFLiteEmbedder", "is_tflite_file", "tflite_model"]
