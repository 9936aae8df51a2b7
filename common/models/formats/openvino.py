"""A sentence encoder as an OpenVINO model that takes token ids, with its tokenizer's files beside it.

    openvino_model.xml, openvino_model.bin
                                the ONNX export's graph (`common.models.formats.onnx`: inputs
                                `input_ids`, `attention_mask`, `token_type_ids`; outputs
                                `last_hidden_state` and the pooled, normalised `sentence_embedding`),
                                converted by `openvino.convert_model`, float32 weights kept
    vocab.txt, tokenizer.json, tokenizer_config.json, special_tokens_map.json
                                the WordPiece tokenizer, as a sentence-transformers folder holds it

Token ids, not strings, for the reason the ONNX export gives: the runtimes that serve it,
sentence-transformers' `backend="openvino"` among them, tokenize with Hugging Face's tokenizer
from the files beside it. The toolkit reads it back (`--model=<folder>`) with its own tokenizer
(the same ids) and OpenVINO's CPU plugin, asked for float32 inference: on a CPU with bfloat16
units the plugin would otherwise compute in bfloat16 by default.

`quantize="int8"`: NNCF's post-training static quantization (`nncf.quantize`, the transformer
preset, which keeps softmax, LayerNorm and GELU in float): int8 weights and activations whose
ranges come from calibration sentences, one per batch so padding does not enter the statistics.
The sentences are a file's lines (`calibration_data`), else `CALIBRATION_SENTENCES` distinct
sentences of STS-B train (`<data_path>/downstream/STS/STSBenchmark/sts-train.csv`), drawn with a
fixed seed. Not exported: what the ONNX export refuses (RoBERTa, "padded_mean", TF Hub
backbones, prompts).

Needs the optional packages `onnx`, `openvino` and, for int8, `nncf` (`pip install .[openvino]`).
"""

from __future__ import annotations

import os
import tempfile
from typing import Any, Callable, Dict, List, Optional

import numpy as np
import tensorflow as tf

from common import artifacts
from common.errors import UserError
from common.models.encoder import SentenceEncoder
from common.models.formats import onnx as onnx_format

DESCRIPTION = ("an OpenVINO model from token ids to pooled, normalised embeddings, tokenizer files beside it "
               "(int8: NNCF static quantization, calibrated on --calibration_data)")
QUANTIZATIONS = ("none", "int8")
# Static quantization reads calibration sentences.
CALIBRATED = ("int8",)
BACKENDS: tuple = ()  # it carries no other runtime's copy (--st_backends)
XML_FILE = "openvino_model.xml"
BIN_FILE = "openvino_model.bin"
EXTRA = "openvino"
CALIBRATION_SENTENCES = 300
CALIBRATION_SEED = 0


def calibration_sentences(calibration_data: Optional[str], data_path: str) -> List[str]:
    """The sentences int8 calibration runs: `calibration_data`'s non-empty lines, else a fixed sample of
    `CALIBRATION_SENTENCES` distinct STS-B train sentences under `data_path`.

    Raises:
        UserError: for a missing or empty file, or no STS-B train under `data_path`.
    """
    if calibration_data:
        if not tf.io.gfile.exists(calibration_data):
            raise UserError(f"--calibration_data={calibration_data}: no such file; give a text file with one "
                            "sentence a line.")
        with tf.io.gfile.GFile(calibration_data) as f:
            sentences = [line.strip() for line in f if line.strip()]
        if not sentences:
            raise UserError(f"--calibration_data={calibration_data}: no sentences in it; give a text file with one "
                            "sentence a line.")
        return sentences
    from common.data.sts import load_stsb

    try:
        train = load_stsb(data_path, "train")
    except (OSError, UserError) as e:
        raise UserError(f"--quantize=int8 calibrates on sentences: give --calibration_data=FILE (one sentence a "
                        f"line), or --data_path holding STS-B train ({e}).") from None
    distinct = sorted(set(train.sentences1) | set(train.sentences2))
    order = np.random.default_rng(CALIBRATION_SEED).permutation(len(distinct))[:CALIBRATION_SENTENCES]
    return [distinct[i] for i in order]


def converted(encoder: SentenceEncoder):
    """The encoder's ONNX graph converted to an `openvino.Model`."""
    ov = onnx_format.require("openvino", EXTRA, "--format=openvino")
    content = onnx_format.model_bytes(encoder)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, onnx_format.ONNX_FILE)
        with open(path, "wb") as f:
            f.write(content)
        return ov.convert_model(path)


def quantized(model, encoder: SentenceEncoder, sentences: List[str]):
    """NNCF's static int8 quantization of `model`, calibrated on `sentences` (one a batch)."""
    nncf = onnx_format.require("nncf", EXTRA, "--format=openvino --quantize=int8")
    items = [onnx_format.token_arrays(encoder.tokenizer, [sentence]) for sentence in sentences]
    return nncf.quantize(model, nncf.Dataset(items), model_type=nncf.ModelType.TRANSFORMER,
                         subset_size=len(items))


def openvino_embedder(folder: str, num_threads: Optional[int] = None,
                      inference_precision: str = "f32") -> onnx_format.GraphEmbedder:
    """Runs the model in `folder` with OpenVINO's CPU plugin in float32 (int8 where it was quantized).

    `inference_precision="bf16"` asks the plugin to compute the float parts in bfloat16, its default on
    CPUs with bfloat16 instructions (Intel AMX, AVX512-BF16); the toolkit's reader asks for "f32", so that
    an export computes as it was written. The encoding-backends benchmark times both.
    """
    ov = onnx_format.require("openvino", EXTRA, "reading an OpenVINO export")
    core = ov.Core()
    config = {"INFERENCE_PRECISION_HINT": inference_precision}
    if num_threads:
        config["INFERENCE_NUM_THREADS"] = num_threads
    compiled = core.compile_model(core.read_model(artifacts.join(folder, XML_FILE)), "CPU", config)
    output = compiled.output(onnx_format.SENTENCE_OUTPUT)

    def run(inputs):
        return compiled(inputs)[output]

    return onnx_format.GraphEmbedder(onnx_format.read_tokenizer(folder), run)


# === The format's row (`common.models.formats`) ===

def writer(encoder: SentenceEncoder, settings: Any) -> Callable[[str], None]:
    """Converts the encoder (and quantizes it, where `settings.quantize` asks) and returns what writes the
    model and the tokenizer.

    Raises:
        UserError: for an encoder the ONNX export refuses, missing packages, or no calibration sentences.
    """
    onnx_format.refuse_unsupported(encoder, settings.model, "openvino")
    onnx_format.require("openvino", EXTRA, "--format=openvino")
    onnx_format.require("onnx", EXTRA, "--format=openvino")
    if settings.quantize == "int8":
        onnx_format.require("nncf", EXTRA, "--format=openvino --quantize=int8")
        sentences = calibration_sentences(settings.calibration_data, settings.data_path)
        model = quantized(converted(encoder), encoder, sentences)
    else:
        model = converted(encoder)

    write_model = model_writer(model)

    def write(folder: str) -> None:
        write_model(folder)
        onnx_format.write_tokenizer(encoder, folder)

    return write


def model_writer(model) -> Callable[[str], None]:
    """What writes `model` (an `openvino.Model`) into a folder as `openvino_model.xml` and `.bin`, float32
    weights kept as they are (`save_model` would halve them to float16 by default)."""
    ov = onnx_format.require("openvino", EXTRA, "--format=openvino")

    def write(folder: str) -> None:
        # OpenVINO writes local files; a gs:// folder gets copies.
        with tempfile.TemporaryDirectory() as tmp:
            ov.save_model(model, os.path.join(tmp, XML_FILE), compress_to_fp16=False)
            for name in (XML_FILE, BIN_FILE):
                tf.io.gfile.copy(os.path.join(tmp, name), artifacts.join(folder, name))

    return write


def record(settings: Any) -> Dict[str, Any]:
    """What `export.json` records of it: the quantization, its calibration sentences and the interface."""
    out = {"quantize": settings.quantize,
           "interface": f"{XML_FILE}: {', '.join(onnx_format.INPUTS)} (int64 [batch, sequence]) -> "
                        f"{onnx_format.TOKEN_OUTPUT}, {onnx_format.SENTENCE_OUTPUT} (pooled, normalised); "
                        "tokenizer files beside it"}
    if settings.quantize == "int8":
        out["calibration"] = (settings.calibration_data or
                              f"{CALIBRATION_SENTENCES} STS-B train sentences (seed {CALIBRATION_SEED})")
    return out


def detect(path: str) -> Optional[str]:
    """The folder holding `openvino_model.xml` and the tokenizer's files that `path` names (the folder, or
    its `openvino_model.xml`), else None."""
    folder = os.path.dirname(path) or "." if path.endswith("/" + XML_FILE) or path == XML_FILE else path
    if (tf.io.gfile.exists(artifacts.join(folder, XML_FILE)) and
            tf.io.gfile.exists(artifacts.join(folder, "vocab.txt")) and
            tf.io.gfile.exists(artifacts.join(folder, "tokenizer_config.json"))):
        return folder
    return None


def read(location: str, max_seq_len: Optional[int], precision: str) -> onnx_format.GraphEmbedder:
    """The embedding function of the model at `location`, which computes as it was exported.

    Raises:
        UserError: for a mixed precision, a `max_seq_len` other than its tokenizer's, or a missing openvino.
    """
    return onnx_format.read_graph(location, max_seq_len, precision, openvino_embedder)
