"""A sentence encoder as one TFLite model, tokenizer inside: 1-D strings -> embeddings.

The graph uses TFLite's built-in kernels plus two of tensorflow-text's TFLite ops
(`FastBertNormalize`, `FastWordpieceTokenizeWithOffsets`); no Select TF ("Flex") op,
which TensorFlow 2.21's pip package can no longer run. An interpreter needs
tensorflow-text's registrar:

    import numpy as np, tensorflow_text
    from tensorflow.lite.python.interpreter import InterpreterWithCustomOps
    interpreter = InterpreterWithCustomOps(
        model_path="model.tflite", custom_op_registerers=tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS)
    run = interpreter.get_signature_runner("serving_default")
    vectors = run(sentences=np.array(["A sentence."], dtype=object))["embeddings"]

What differs from the SavedModel: tokenization uses tensorflow-text's
`FastBertTokenizer` normaliser (lower-casing with NFKC case folding) instead of the
Hugging Face-exact one, whose regex and Unicode ops have no TFLite kernel; a
sentence with characters that NFKC folds (`´`, `…`, `½`, full-width forms, ...)
gets other word pieces (58 of the 47,618 distinct STS, STS-B and SICK sentences).
Control characters and CJK spacing are not handled, and invalid UTF-8 is not
replaced. `quantize="int8"` stores weights as int8 with float activations
(TFLite's dynamic-range quantization).
"""

from __future__ import annotations

import warnings
from typing import Any, Callable, Dict, Optional, Sequence, Union

import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text

from common import artifacts, compat
from common.errors import UserError
from common.models.bpe_tokenization import ByteLevelBpeTokenizer
from common.models.encoder import SentenceEncoder
from common.models.sources.exported import SERVING_INPUT, SERVING_OUTPUT, refuse_length, refuse_precision

DESCRIPTION = "one TFLite model, tokenizer inside"
TFLITE_FILE = "model.tflite"
QUANTIZATIONS = ("none", "int8")
CALIBRATED: tuple = ()  # no --quantize value here reads calibration sentences
BACKENDS: tuple = ()  # it carries no other runtime's copy (--st_backends)
SIGNATURE = "serving_default"


def tflite_model(encoder: SentenceEncoder, quantize: str = "none") -> bytes:
    """Converts `encoder` (tokenizer, backbone, pooling, normalisation) to a TFLite flatbuffer.

    Args:
        encoder: SentenceEncoder.
        quantize: str. "none" (float32 weights) or "int8" (dynamic-range int8 weights).

    Returns:
        The model's bytes, with one signature `serving_default`: `sentences` (1-D
        string) -> `embeddings` [batch, hidden].

    Raises:
        UserError: for an unknown `quantize`.
    """
    convert_variables_to_constants_v2 = compat.variables_to_constants()

    if quantize not in QUANTIZATIONS:
        raise UserError(f"quantize must be one of {QUANTIZATIONS}, got {quantize!r}.")
    tokenizer = encoder.tokenizer
    fast = tf_text.FastBertTokenizer(vocab=tokenizer.vocabulary, token_out_type=tf.int32, unknown_token="[UNK]",
                                     lower_case_nfd_strip_accents=tokenizer.config.lowercase)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name=SERVING_INPUT)])
    def serve(sentences):
        pieces = fast.tokenize(sentences)  # [B, (pieces)]
        tokens = tokenizer.pack_pieces(pieces.flat_values, pieces.row_splits)
        return {SERVING_OUTPUT: encoder(tokens, training=False)["embedding"]}

    # Weights as constants: with variables, TF 2.21's converter keeps resource-variable
    # ops that the float model then reads uninitialised (NaN embeddings).
    frozen = convert_variables_to_constants_v2(serve.get_concrete_function())

    # Freezing drops the output's name; the signature takes it from this wrapper.
    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name=SERVING_INPUT)])
    def named(sentences):
        return {SERVING_OUTPUT: tf.nest.flatten(frozen(sentences))[0]}

    # An empty trackable object: the converter's current path, which keeps the signature.
    converter = tf.lite.TFLiteConverter.from_concrete_functions([named.get_concrete_function()], tf.Module())
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
    converter.allow_custom_ops = True  # tensorflow-text's tokenizer ops, which it registers in the interpreter
    if quantize == "int8":
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
    return converter.convert()


class TFLiteEmbedder:
    """Runs an exported TFLite sentence encoder: 1-D strings -> float32 embeddings.

    Args:
        model: str or bytes. A `.tflite` file (local or `gs://`) or its content.
        num_threads: int or None. Interpreter threads. Defaults to TFLite's choice.
    """

    def __init__(self, model: Union[str, bytes], num_threads: Optional[int] = None):
        from tensorflow.lite.python.interpreter import InterpreterWithCustomOps

        if isinstance(model, str):
            with tf.io.gfile.GFile(model, "rb") as f:
                model = f.read()
        self.size_bytes = len(model)
        with warnings.catch_warnings():
            # TF 2.21 warns that tf.lite's interpreter moves to ai-edge-litert; tensorflow-text's
            # registrar is built against this one, so it is the one to use here.
            warnings.filterwarnings("ignore", message=".*tf.lite.Interpreter is deprecated", category=UserWarning)
            self._interpreter = InterpreterWithCustomOps(
                model_content=model, custom_op_registerers=tf_text.tflite_registrar.SELECT_TFTEXT_OPS,
                num_threads=num_threads)
        self._runner = self._interpreter.get_signature_runner(SIGNATURE)

    def __call__(self, sentences: Union[tf.Tensor, Sequence[str]]) -> np.ndarray:
        if isinstance(sentences, tf.Tensor):
            sentences = sentences.numpy()
        batch = np.array([s.encode("utf-8") if isinstance(s, str) else s for s in sentences], dtype=object)
        return self._runner(**{SERVING_INPUT: batch})[SERVING_OUTPUT]


def is_tflite_file(path: str) -> bool:
    """A `.tflite` file (what `--model=<file>.tflite` names)."""
    return path.endswith(".tflite") and tf.io.gfile.exists(path) and not tf.io.gfile.isdir(path)


# === The format's row (`common.models.formats`) ===

def writer(encoder: SentenceEncoder, settings: Any) -> Callable[[str], None]:
    """Converts `encoder` (`tflite_model`) and returns what writes `model.tflite` into a folder.

    Args:
        encoder: SentenceEncoder. Its tokenizer must be WordPiece (BERT).
        settings: the export's settings (`common.export.ExportConfig`): `model`, `quantize`.

    Raises:
        UserError: for a byte-level BPE (RoBERTa) tokenizer, which has no TFLite ops.
    """
    if isinstance(encoder.tokenizer, ByteLevelBpeTokenizer):
        raise UserError(f"{settings.model}: --format=tflite packs a WordPiece (BERT) tokenizer with TFLite's "
                        "built-in ops; this encoder tokenizes with byte-level BPE (RoBERTa): use "
                        "--format=sentence-transformers.")
    content = tflite_model(encoder, settings.quantize)

    def write(folder: str) -> None:
        with tf.io.gfile.GFile(artifacts.join(folder, TFLITE_FILE), "wb") as f:
            f.write(content)

    return write


def record(settings: Any) -> Dict[str, Any]:
    """What `export.json` records of a TFLite export: its quantization and its tokenizer."""
    return {"quantize": settings.quantize,
            "tokenizer": ("tensorflow-text FastBertTokenizer (NFKC lower-casing); see "
                          "common/models/formats/tflite.py for how it differs from the SavedModel's")}


def detect(path: str) -> Optional[str]:
    """The TFLite model `path` names (a `.tflite` file, or a folder holding `model.tflite`), else None."""
    for candidate in (path, artifacts.join(path, TFLITE_FILE)):
        if is_tflite_file(candidate):
            return candidate
    return None


def read(location: str, max_seq_len: Optional[int], precision: str) -> TFLiteEmbedder:
    """The embedding function of the TFLite model at `location`, which computes as it was exported.

    Raises:
        UserError: for a mixed precision or a `max_seq_len` (the model records none).
    """
    refuse_precision(location, precision)
    refuse_length(location, max_seq_len, None)
    return TFLiteEmbedder(location)
