"""A sentence encoder as one ONNX graph that takes token ids, with its tokenizer's files beside it.

    model.onnx                  inputs `input_ids`, `attention_mask`, `token_type_ids` (int64
                                [batch, sequence]); outputs `last_hidden_state` [batch, sequence,
                                hidden] and `sentence_embedding` [batch, dim]: the encoder's pooling,
                                Dense layers and L2 normalisation, all inside the graph
    vocab.txt, tokenizer.json, tokenizer_config.json, special_tokens_map.json
                                the WordPiece tokenizer, as a sentence-transformers folder holds it

Why token ids rather than strings: ONNX has no standard operator for WordPiece tokenization
(ONNX Runtime's needs its extensions library, OpenVINO's its tokenizers package), while every
runtime that serves these graphs, sentence-transformers' `backend="onnx"` and
`backend="openvino"` among them, tokenizes with Hugging Face's tokenizer from the files beside
the graph and feeds these three inputs. The toolkit's own tokenizer gives the same ids (tested),
so `--model=<folder>` here tokenizes with it and runs the graph. Why pooling and normalisation
are inside: a runtime that reads `sentence_embedding` gets the model's embedding without
re-implementing either; one that reads `last_hidden_state` (sentence-transformers, whose
Pooling and Normalize modules follow) gets the token vectors, so one file serves both.

The graph is written with `onnx.helper` from the backbone's weights (opset 17), as Hugging Face's
`BertModel` computes: embeddings and their LayerNorm, post-LN layers of multi-head attention and
a feed-forward block with the checkpoint's GELU (erf, or tanh for "gelu_approximate"), then the
encoder's pooling ("mean" over real tokens, "cls", or "pooler": tanh(dense([CLS]))), its Dense
layers and, where it normalises, x / max(|x|, 1e-12). Float32; it equals the toolkit's encoder to
float32 round-off (a test).

`quantize="int8"`: ONNX Runtime's dynamic quantization (`quantize_dynamic`, int8 weights of every
MatMul, activations quantized per batch at run time), the scheme sentence-transformers' own ONNX
int8 exports use. It needs no calibration sentences; static activation ranges from calibration
lose more accuracy on BERT's attention and GELU outputs. Not exported: byte-level BPE (RoBERTa)
tokenizers, "padded_mean" pooling, TF Hub backbones, and a model's prompts (prepend a prompt to
the sentences yourself).

Needs the optional packages `onnx` and `onnxruntime` (`pip install .[onnx]`).
"""

from __future__ import annotations

import json
import logging
import math
import os
import tempfile
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

import numpy as np
import tensorflow as tf

from common import artifacts
from common.errors import UserError
from common.models import hf_weights
from common.models.bert import BertBackbone
from common.models.bpe_tokenization import ByteLevelBpeTokenizer
from common.models.encoder import SentenceEncoder
from common.models.pooling import PADDED_MEAN
from common.models.sources.exported import refuse_length, refuse_precision
from common.models.tokenization import BertTokenizer, TokenizerConfig, read_vocabulary
from common.models.tokenizer_files import write_tokenizer_files

DESCRIPTION = "one ONNX graph from token ids to pooled, normalised embeddings, tokenizer files beside it"
QUANTIZATIONS = ("none", "int8")
# Dynamic quantization reads no calibration sentences.
CALIBRATED: tuple = ()
BACKENDS: tuple = ()  # it carries no other runtime's copy (--st_backends)
ONNX_FILE = "model.onnx"
INPUTS = ("input_ids", "attention_mask", "token_type_ids")
TOKEN_OUTPUT = "last_hidden_state"
SENTENCE_OUTPUT = "sentence_embedding"
OPSET = 17
# The pip extra that installs what this format needs (pyproject.toml).
EXTRA = "onnx"
# x / max(|x|, eps): tf.math.l2_normalize's epsilon, on the squared norm there.
_NORM_EPSILON = 1e-12


def require(module: str, extra: str, what: str):
    """Imports an optional package, or raises a one-line UserError naming the extra to install.

    Args:
        module: str. The module to import ("onnx", "onnxruntime", "openvino", "nncf").
        extra: str. The pyproject extra that installs it.
        what: str. What needs it, for the message (e.g. "--format=onnx").
    """
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise UserError(f"{what} needs the optional package {module!r}, which is not installed; install the "
                        f"extra with `pip install .[{extra}]` (pinned versions in constraints.txt).") from None


def refuse_unsupported(encoder: SentenceEncoder, model: str, format_name: str) -> None:
    """Raises UserError for an encoder the graph builder cannot write."""
    if not isinstance(encoder.backbone, BertBackbone):
        raise UserError(f"{model}: --format={format_name} writes a BERT built by this toolkit; this one wraps a TF "
                        "Hub SavedModel, whose layers have no names to build the graph from: use --format=savedmodel.")
    if isinstance(encoder.tokenizer, ByteLevelBpeTokenizer) or encoder.backbone.config.model_type != "bert":
        raise UserError(f"{model}: --format={format_name} writes WordPiece (BERT) models; this one is a RoBERTa "
                        "with a byte-level BPE tokenizer: use --format=sentence-transformers or --format=savedmodel.")
    if encoder.pooling == PADDED_MEAN:
        raise UserError(f"{model}: its pooling averages the padding positions too (padded_mean), which depends on "
                        f"padding every input to max_seq_len; --format={format_name} pools real tokens only: use "
                        "--format=tflite or --format=savedmodel.")


# === The graph ===

class _Graph:
    """Nodes and initializers of an ONNX graph under construction, each name unique."""

    def __init__(self):
        from onnx import helper, numpy_helper

        self.helper, self.numpy_helper = helper, numpy_helper
        self.nodes: List[Any] = []
        self.initializers: List[Any] = []
        self._count = 0
        self._names = set()

    def const(self, value: np.ndarray, name: str) -> str:
        """An initializer named `name`, with a suffix where the name is taken."""
        self._count += 1
        name = name if name not in self._names else f"{name}_{self._count}"
        self._names.add(name)
        self.initializers.append(self.numpy_helper.from_array(np.asarray(value), name))
        return name

    def op(self, kind: str, inputs: Sequence[str], output: Optional[str] = None, **attributes) -> str:
        self._count += 1
        output = output or f"{kind.lower()}_{self._count}"
        self.nodes.append(self.helper.make_node(kind, list(inputs), [output], name=f"{kind}_{self._count}",
                                                **attributes))
        return output


def _linear(g: _Graph, x: str, weights: Dict[str, np.ndarray], prefix: str) -> str:
    """x @ W^T + b for a Hugging Face Linear `prefix` (weight [out, in])."""
    kernel = g.const(np.ascontiguousarray(weights[prefix + ".weight"].T), prefix + ".kernel")
    bias = g.const(weights[prefix + ".bias"], prefix + ".bias")
    return g.op("Add", [g.op("MatMul", [x, kernel]), bias])


def _layer_norm(g: _Graph, x: str, weights: Dict[str, np.ndarray], prefix: str, epsilon: float) -> str:
    return g.op("LayerNormalization", [x, g.const(weights[prefix + ".weight"], prefix + ".weight"),
                                       g.const(weights[prefix + ".bias"], prefix + ".bias")],
                axis=-1, epsilon=float(epsilon))


def _gelu(g: _Graph, x: str, approximate: bool) -> str:
    """GELU: 0.5 x (1 + erf(x / sqrt 2)), or with tanh(sqrt(2 / pi) (x + 0.044715 x^3)) for the approximation."""
    half, one = g.const(np.float32(0.5), "half"), g.const(np.float32(1.0), "one")
    if approximate:
        cube = g.op("Mul", [g.op("Mul", [x, x]), x])
        inner = g.op("Add", [x, g.op("Mul", [cube, g.const(np.float32(0.044715), "gelu_cubic")])])
        core = g.op("Tanh", [g.op("Mul", [inner, g.const(np.float32(math.sqrt(2 / math.pi)), "gelu_scale")])])
    else:
        core = g.op("Erf", [g.op("Div", [x, g.const(np.float32(math.sqrt(2.0)), "sqrt2")])])
    return g.op("Mul", [g.op("Mul", [x, half]), g.op("Add", [core, one])])


def _dense_activation(g: _Graph, x: str, name: str) -> str:
    if name == "tanh":
        return g.op("Tanh", [x])
    if name == "linear":
        return x
    raise UserError(f"a Dense layer with activation {name!r}: the ONNX graph writes tanh and linear ones only.")


def onnx_model(encoder: SentenceEncoder):
    """Builds `encoder`'s graph (the module docstring): token ids -> `last_hidden_state`, `sentence_embedding`.

    Args:
        encoder: SentenceEncoder with a WordPiece BertBackbone (`refuse_unsupported` passed).

    Returns:
        onnx.ModelProto, checked.
    """
    onnx = require("onnx", EXTRA, "the ONNX graph")
    from onnx import TensorProto, helper

    backbone = encoder.backbone
    config = backbone.config
    if config.activation not in ("gelu", "gelu_approximate"):
        raise UserError(f"a BERT with activation {config.activation!r}: the ONNX graph writes GELU (erf or tanh) "
                        "feed-forward blocks only.")
    weights = hf_weights.hf_state_dict(backbone)
    hidden, heads = config.hidden_size, config.num_heads
    head_dim = hidden // heads
    eps = config.layer_norm_eps
    g = _Graph()

    ids, mask, types = INPUTS
    # Embeddings: word + position (0 .. T-1) + token type, then LayerNorm.
    words = g.op("Gather", [g.const(weights["embeddings.word_embeddings.weight"], "word_embeddings"), ids])
    length = g.op("Gather", [g.op("Shape", [ids]), g.const(np.int64(1), "axis_one")], axis=0)
    positions = g.op("Range", [g.const(np.int64(0), "zero"), length, g.const(np.int64(1), "step")])
    positions = g.op("Gather", [g.const(weights["embeddings.position_embeddings.weight"], "position_embeddings"),
                                positions])  # [T, H]
    segments = g.op("Gather", [g.const(weights["embeddings.token_type_embeddings.weight"], "token_type_embeddings"),
                               types])
    x = g.op("Add", [g.op("Add", [words, positions]), segments])
    x = _layer_norm(g, x, weights, "embeddings.LayerNorm", eps)

    # Additive attention mask: 0 where a key is a real token, -1e9 at padding ([B, 1, 1, T]), as Keras' softmax.
    mask_float = g.op("Cast", [mask], to=TensorProto.FLOAT)
    keep = g.op("Unsqueeze", [mask_float, g.const(np.array([1, 2], np.int64), "mask_axes")])
    bias = g.op("Mul", [g.op("Sub", [g.const(np.float32(1.0), "mask_one"), keep]),
                        g.const(np.float32(-1e9), "mask_negative")])
    per_head = g.const(np.array([0, 0, heads, head_dim], np.int64), "per_head_shape")
    merged = g.const(np.array([0, 0, hidden], np.int64), "merged_shape")
    scale = g.const(np.float32(1.0 / math.sqrt(head_dim)), "attention_scale")

    for i in range(config.num_layers):
        p = f"encoder.layer.{i}."

        def heads_of(name: str, perm: List[int]) -> str:
            projected = _linear(g, x, weights, p + f"attention.self.{name}")
            return g.op("Transpose", [g.op("Reshape", [projected, per_head])], perm=perm)

        query = g.op("Mul", [heads_of("query", [0, 2, 1, 3]), scale])  # [B, h, T, d], scaled first as Keras does
        key = heads_of("key", [0, 2, 3, 1])  # [B, h, d, T]
        value = heads_of("value", [0, 2, 1, 3])  # [B, h, T, d]
        scores = g.op("Add", [g.op("MatMul", [query, key]), bias])  # [B, h, T, T]
        context = g.op("MatMul", [g.op("Softmax", [scores], axis=-1), value])  # [B, h, T, d]
        context = g.op("Reshape", [g.op("Transpose", [context], perm=[0, 2, 1, 3]), merged])  # [B, T, H]
        attended = _linear(g, context, weights, p + "attention.output.dense")
        x = _layer_norm(g, g.op("Add", [attended, x]), weights, p + "attention.output.LayerNorm", eps)
        h = _gelu(g, _linear(g, x, weights, p + "intermediate.dense"), config.activation == "gelu_approximate")
        y = _linear(g, h, weights, p + "output.dense")
        x = _layer_norm(g, g.op("Add", [y, x]), weights, p + "output.LayerNorm", eps)
    tokens = g.op("Identity", [x], TOKEN_OUTPUT)

    # Pooling.
    if encoder.pooling == "mean":
        weights_3d = g.op("Unsqueeze", [mask_float, g.const(np.array([2], np.int64), "pool_axes")])  # [B, T, 1]
        total = g.op("ReduceSum", [g.op("Mul", [tokens, weights_3d]), g.const(np.array([1], np.int64), "time_axis")],
                     keepdims=0)  # [B, H]
        count = g.op("ReduceSum", [weights_3d, g.const(np.array([1], np.int64), "time_axis_2")], keepdims=0)
        pooled = g.op("Div", [total, g.op("Max", [count, g.const(np.float32(1e-9), "count_floor")])])
    else:
        first = g.op("Gather", [tokens, g.const(np.int64(0), "first_token")], axis=1)  # [B, H]
        pooled = (g.op("Tanh", [_linear(g, first, weights, "pooler.dense")]) if encoder.pooling == "pooler"
                  else first)
    for j, layer in enumerate(encoder.dense_layers):
        kernel = g.const(np.asarray(layer.kernel.numpy(), np.float32), f"dense_{j}.kernel")
        pooled = g.op("MatMul", [pooled, kernel])
        if layer.use_bias:
            pooled = g.op("Add", [pooled, g.const(np.asarray(layer.bias.numpy(), np.float32), f"dense_{j}.bias")])
        pooled = _dense_activation(g, pooled, layer.get_config()["activation"])
    if encoder.normalize:
        squared = g.op("ReduceSum", [g.op("Mul", [pooled, pooled]), g.const(np.array([1], np.int64), "dim_axis")],
                       keepdims=1)
        norm = g.op("Sqrt", [g.op("Max", [squared, g.const(np.float32(_NORM_EPSILON), "norm_floor")])])
        pooled = g.op("Div", [pooled, norm])
    g.op("Identity", [pooled], SENTENCE_OUTPUT)

    dims = ["batch_size", "sequence_length"]
    graph = helper.make_graph(
        g.nodes, "sentence_encoder",
        [helper.make_tensor_value_info(name, TensorProto.INT64, dims) for name in INPUTS],
        [helper.make_tensor_value_info(TOKEN_OUTPUT, TensorProto.FLOAT, dims + [hidden]),
         helper.make_tensor_value_info(SENTENCE_OUTPUT, TensorProto.FLOAT, ["batch_size", encoder.embedding_size])],
        g.initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="sentence-embeddings-tf")
    # ONNX Runtime 1.32 reads IR version 10 at most; opset 17 needs 8.
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def quantized_dynamic(model_bytes: bytes) -> bytes:
    """ONNX Runtime's dynamic int8 quantization of a float graph (int8 MatMul weights, per-channel)."""
    require("onnxruntime", EXTRA, "--quantize=int8")
    from onnxruntime.quantization import QuantType, quantize_dynamic

    root = logging.getLogger()
    level = root.level
    with tempfile.TemporaryDirectory() as tmp:
        source, target = os.path.join(tmp, "float.onnx"), os.path.join(tmp, "int8.onnx")
        with open(source, "wb") as f:
            f.write(model_bytes)
        # Its advice to run shape inference first is for static (QDQ) quantization, not this.
        root.setLevel(logging.ERROR)
        try:
            quantize_dynamic(source, target, weight_type=QuantType.QInt8, per_channel=True,
                             op_types_to_quantize=["MatMul"])
        finally:
            root.setLevel(level)
        with open(target, "rb") as f:
            return f.read()


def model_bytes(encoder: SentenceEncoder, quantize: str = "none") -> bytes:
    """The serialized graph of `encoder`, float32 or dynamically quantized to int8."""
    content = onnx_model(encoder).SerializeToString()
    return quantized_dynamic(content) if quantize == "int8" else content


# === Tokenizer files and the toolkit's reader ===

def write_tokenizer(encoder: SentenceEncoder, folder: str) -> None:
    """The tokenizer's files in `folder` (vocab.txt, tokenizer.json, ...), as a sentence-transformers folder holds
    them, `model_max_length` the encoder's length."""
    write_tokenizer_files(encoder.tokenizer, folder, encoder.encoder_config.max_seq_len)


def read_tokenizer(folder: str) -> BertTokenizer:
    """The toolkit's tokenizer for the files `write_tokenizer` wrote: vocab.txt, and `do_lower_case` and
    `model_max_length` of tokenizer_config.json."""
    with tf.io.gfile.GFile(artifacts.join(folder, "tokenizer_config.json")) as f:
        config = json.load(f)
    return BertTokenizer(read_vocabulary(artifacts.join(folder, "vocab.txt")),
                         TokenizerConfig(max_seq_len=int(config["model_max_length"]),
                                         lowercase=bool(config.get("do_lower_case", True))))


def token_arrays(tokenizer: Callable, sentences: Union[tf.Tensor, Sequence[str]]) -> Dict[str, np.ndarray]:
    """The graph's three int64 inputs for `sentences`, tokenized by the toolkit's tokenizer (or a traced
    function of it)."""
    tokens = tokenizer(tf.constant(sentences) if not isinstance(sentences, tf.Tensor) else sentences)
    return {"input_ids": tokens["token_ids"].numpy().astype(np.int64),
            "attention_mask": tokens["padding_mask"].numpy().astype(np.int64),
            "token_type_ids": tokens["segment_ids"].numpy().astype(np.int64)}


class GraphEmbedder:
    """1-D strings -> float32 embeddings: the toolkit's tokenizer, then a compiled graph's `sentence_embedding`.

    Args:
        tokenizer: BertTokenizer. Read from the files beside the graph (`read_tokenizer`).
        run: callable. A dict of the three int64 inputs -> [batch, dim] embeddings.
    """

    def __init__(self, tokenizer: BertTokenizer, run: Callable[[Dict[str, np.ndarray]], np.ndarray]):
        self.tokenizer, self._run = tokenizer, run
        # Traced once: run eagerly, the tokenizer's many small ops cost more than the graph itself.
        spec = [tf.TensorSpec([None], tf.string)]
        self._tokenize = tf.function(tokenizer.__call__, input_signature=spec)
        self.token_counts = tf.function(tokenizer.token_counts, input_signature=spec)  # what batches are sorted by

    def __call__(self, sentences: Union[tf.Tensor, Sequence[str]]) -> np.ndarray:
        return np.asarray(self._run(token_arrays(self._tokenize, sentences)), np.float32)


def onnx_embedder(path: str, num_threads: Optional[int] = None) -> GraphEmbedder:
    """Runs `model.onnx` in `path` (or the `.onnx` file `path`) with ONNX Runtime on the CPU."""
    ort = require("onnxruntime", EXTRA, "reading an ONNX export")
    folder, file = (path, artifacts.join(path, ONNX_FILE)) if tf.io.gfile.isdir(path) else (os.path.dirname(path), path)
    options = ort.SessionOptions()
    if num_threads:
        options.intra_op_num_threads = num_threads
    with tf.io.gfile.GFile(file, "rb") as f:
        session = ort.InferenceSession(f.read(), options, providers=["CPUExecutionProvider"])

    def run(inputs):
        return session.run([SENTENCE_OUTPUT], inputs)[0]

    return GraphEmbedder(read_tokenizer(folder), run)


def _has_tokenizer(folder: str) -> bool:
    return all(tf.io.gfile.exists(artifacts.join(folder, name)) for name in ("vocab.txt", "tokenizer_config.json"))


# === The format's row (`common.models.formats`) ===

def writer(encoder: SentenceEncoder, settings: Any) -> Callable[[str], None]:
    """Builds the graph (quantized as `settings.quantize` asks) and returns what writes it and the tokenizer.

    Raises:
        UserError: for an encoder `refuse_unsupported` names, or a missing `onnx`/`onnxruntime`.
    """
    refuse_unsupported(encoder, settings.model, "onnx")
    require("onnx", EXTRA, "--format=onnx")
    content = model_bytes(encoder, settings.quantize)

    def write(folder: str) -> None:
        with tf.io.gfile.GFile(artifacts.join(folder, ONNX_FILE), "wb") as f:
            f.write(content)
        write_tokenizer(encoder, folder)

    return write


def record(settings: Any) -> Dict[str, Any]:
    """What `export.json` records of it: the quantization and the graph's interface."""
    return {"quantize": settings.quantize,
            "interface": f"{ONNX_FILE}: {', '.join(INPUTS)} (int64 [batch, sequence]) -> {TOKEN_OUTPUT}, "
                         f"{SENTENCE_OUTPUT} (pooled, normalised); tokenizer files beside it"}


def detect(path: str) -> Optional[str]:
    """`path` where it is a folder holding `model.onnx` and the tokenizer's files, or such a `.onnx` file
    (the folder it is in holding them); else None."""
    if path.endswith(".onnx") and tf.io.gfile.exists(path) and not tf.io.gfile.isdir(path):
        return path if _has_tokenizer(os.path.dirname(path) or ".") else None
    if tf.io.gfile.exists(artifacts.join(path, ONNX_FILE)) and _has_tokenizer(path):
        return path
    return None


def read(location: str, max_seq_len: Optional[int], precision: str) -> GraphEmbedder:
    """The embedding function of the graph at `location`, which computes as it was exported (float32 or int8).

    Raises:
        UserError: for a mixed precision, a `max_seq_len` other than its tokenizer's, or a missing onnxruntime.
    """
    return read_graph(location, max_seq_len, precision, onnx_embedder)


def read_graph(location: str, max_seq_len: Optional[int], precision: str,
               load: Callable[[str], "GraphEmbedder"]) -> "GraphEmbedder":
    """`load(location)`, refusing what a graph exported at one precision and length cannot honour (the
    shared half of the ONNX and OpenVINO readers)."""
    refuse_precision(location, precision)
    embedder = load(location)
    refuse_length(location, max_seq_len, embedder.tokenizer.config.max_seq_len)
    return embedder
