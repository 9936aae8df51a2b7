"""Write a sentence encoder as a Hugging Face BERT folder with sentence-transformers modules.

The folder is what `SentenceTransformer(folder)` loads, and what this toolkit's own
loader (`build_encoder(EncoderConfig(spec=folder))`, i.e. `--model=<folder>`) reads:

    config.json                 BertModel configuration (BertConfig.to_hf_config)
    model.safetensors           the backbone, Hugging Face key names (hf_weights.hf_state_dict)
    vocab.txt, tokenizer.json, tokenizer_config.json, special_tokens_map.json
                                (a RoBERTa encoder: vocab.json and merges.txt for vocab.txt,
                                RobertaModel's config, a byte-level BPE tokenizer.json)
    modules.json                Transformer -> Pooling (-> Dense for pooling "pooler")
                                (-> Dense for each of the encoder's Dense layers)
                                (-> Normalize when the encoder normalises)
    sentence_bert_config.json   max_seq_length: the encoder's length (export.py's --max_seq_len,
                                else the model's own maximum, never a run's training length)
    1_Pooling/config.json       the encoder's pooling (mean or CLS; CLS for "pooler") as one boolean
                                per mode, which every sentence-transformers version reads, and
                                `include_prompt`
    2_Dense/                    pooling "pooler" only: BERT's pooler (config.json: square, tanh;
                                model.safetensors: `linear.*`, the checkpoint's `pooler.dense.*`),
                                which sentence-transformers' Pooling cannot apply itself
    <n>_Dense/                  each Dense layer of an encoder loaded from a folder that has them
    <n>_Normalize/              (empty) when the encoder L2-normalises
    config_sentence_transformers.json
                                the encoder's `prompts` and `default_prompt_name`
    onnx/model.onnx             with `backends` "onnx": the ONNX export's graph (`common.models.formats.onnx`),
                                float32, which `SentenceTransformer(folder, backend="onnx")` loads
    openvino/openvino_model.xml, openvino/openvino_model.bin
                                with `backends` "openvino": the OpenVINO export's model, float32, which
                                `SentenceTransformer(folder, backend="openvino")` loads

sentence-transformers' backends feed `input_ids`, `attention_mask` and `token_type_ids` and read
the first output, `last_hidden_state`, which its Pooling (and Dense, Normalize) modules then take
as with PyTorch; the graph's `sentence_embedding` output is the same embedding computed inside.

Every folder's `model.safetensors` holds BERT's pooler as `pooler.dense.*`, so
`transformers`' `BertModel` gives an encoder with pooling "pooler" as its `pooler_output`.

keras-hub reads the same folder (`keras_hub.models.BertBackbone.from_preset(folder)`,
`keras_hub.models.BertTextEmbedder.from_preset(folder)`), with its own tanh GELU.
A pretraining head (`cls.*`, a masked-LM run's) is not written: the folder is a
sentence encoder, as sentence-transformers' own `BertModel` folders are.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional

import tensorflow as tf

from common import artifacts
from common.errors import UserError
from common.models import hf_weights
from common.models import st_folder
from common.models.bert import BertBackbone
from common.models.encoder import EncoderConfig, SentenceEncoder, build_encoder
from common.models.pooling import PADDED_MEAN
from common.models.sources.hf_folder import is_hf_bert_dir
from common.models.tokenizer_files import write_json, write_tokenizer_files

DESCRIPTION = "a Hugging Face BERT folder with sentence-transformers modules"
# Weights are written as they are (float32).
QUANTIZATIONS = ("none",)
CALIBRATED: tuple = ()  # no --quantize value here reads calibration sentences
# The runtimes whose copies of the model the folder can carry (`export.py --st_backends`), each a
# subfolder named as sentence-transformers' `backend=` looks for it.
BACKENDS = ("onnx", "openvino")

# sentence-transformers' own name of `torch.nn.Tanh`, which its Dense module imports by it.
TANH = st_folder.TANH
_MODULE_PREFIX = "sentence_transformers.models."


def _modules(dense: int, normalize: bool) -> List[Dict[str, Any]]:
    """modules.json: Transformer, Pooling, then `dense` Dense modules and Normalize where asked, each in
    `<idx>_<Name>/`."""
    kinds = ["Transformer", "Pooling"] + ["Dense"] * dense + ["Normalize"] * normalize
    return [{"idx": i, "name": str(i), "path": "" if i == 0 else f"{i}_{kind}", "type": _MODULE_PREFIX + kind}
            for i, kind in enumerate(kinds)]


def write_sentence_transformers(encoder: SentenceEncoder, path: str) -> None:
    """Writes `encoder` into the existing, empty directory `path` (local or `gs://`).

    Args:
        encoder: SentenceEncoder with a Keras BERT backbone.
        path: str. The folder to fill; callers write it atomically
            (`common.artifacts.write_atomically`).

    Raises:
        UserError: for an encoder whose backbone is a TF Hub SavedModel (its
            variables have no Hugging Face names to write).
    """
    from safetensors.numpy import save as safetensors_bytes

    backbone = encoder.backbone
    if not isinstance(backbone, BertBackbone):
        raise UserError("Only BERT encoders built by this toolkit (minilm, Hugging Face BERT folders, fresh BERTs "
                         "and runs trained from them) can be exported to Hugging Face's format; this one wraps a "
                         f"TF Hub SavedModel ({getattr(backbone, 'handle', 'unknown')}), whose variables have no "
                         "Hugging Face names.")
    tokenizer, config = encoder.tokenizer, encoder.encoder_config
    ids = tokenizer.special_token_ids()
    hf_config = backbone.config.to_hf_config(pad_token_id=ids["pad"])
    if backbone.config.model_type == "roberta":
        hf_config.update(bos_token_id=ids["cls"], eos_token_id=ids["sep"])
    write_json(artifacts.join(path, "config.json"), hf_config)
    # transformers refuses a safetensors file without a "format" entry in its metadata.
    with tf.io.gfile.GFile(artifacts.join(path, "model.safetensors"), "wb") as f:
        f.write(safetensors_bytes(hf_weights.hf_state_dict(backbone), metadata={"format": "pt"}))

    write_tokenizer_files(tokenizer, path, config.max_seq_len)

    pooler = config.pooling == "pooler"
    modules = _modules(pooler + len(encoder.dense_layers), config.normalize)
    write_json(artifacts.join(path, "modules.json"), modules)
    folders = {m["type"].rsplit(".", 1)[1]: artifacts.join(path, m["path"]) for m in modules[1:]}
    dense_folders = [artifacts.join(path, m["path"]) for m in modules if m["type"].endswith(".Dense")]
    # do_lower_case here would lower-case before the tokenizer; the tokenizer does it itself.
    write_json(artifacts.join(path, "sentence_bert_config.json"),
                {"max_seq_length": config.max_seq_len, "do_lower_case": False})
    write_json(artifacts.join(path, "config_sentence_transformers.json"),
                {"prompts": dict(encoder.prompts), "default_prompt_name": encoder.default_prompt_name,
                 "similarity_fn_name": "cosine"})
    for folder in [*folders.values(), *dense_folders]:
        tf.io.gfile.makedirs(folder)
    write_json(artifacts.join(folders["Pooling"], "config.json"), {
        "word_embedding_dimension": backbone.hidden_size,
        "pooling_mode_cls_token": config.pooling in ("cls", "pooler"),
        "pooling_mode_mean_tokens": config.pooling == "mean",
        "pooling_mode_max_tokens": False,
        "pooling_mode_mean_sqrt_len_tokens": False,
        "pooling_mode_weightedmean_tokens": False,
        "pooling_mode_lasttoken": False,
        "include_prompt": encoder.include_prompt,
    })
    if pooler:
        hidden = backbone.hidden_size
        _write_dense(dense_folders.pop(0), hidden, hidden, True, TANH,
                     hf_weights.pooler_weight_map(backbone, "linear."))
    for folder, layer in zip(dense_folders, encoder.dense_layers):
        activation = st_folder.KERAS_TO_ST_ACTIVATION[layer.get_config()["activation"]]
        _write_dense(folder, int(layer.kernel.shape[0]), layer.units, layer.use_bias, activation,
                     st_folder.dense_weight_map(layer))


def _write_dense(folder: str, in_features: int, out_features: int, bias: bool, activation: str,
                 entries: List[hf_weights.HFTensor]) -> None:
    """A sentence-transformers Dense module: config.json and model.safetensors (`linear.*`)."""
    from safetensors.numpy import save as safetensors_bytes

    write_json(artifacts.join(folder, "config.json"), {"in_features": in_features, "out_features": out_features,
                                                        "bias": bias, "activation_function": activation})
    with tf.io.gfile.GFile(artifacts.join(folder, st_folder.WEIGHTS_FILE), "wb") as f:
        f.write(safetensors_bytes({entry.name: entry.to_hf() for entry in entries}, metadata={"format": "pt"}))


# === The format's row (`common.models.formats`) ===

def writer(encoder: SentenceEncoder, settings: Any) -> Callable[[str], None]:
    """What writes `encoder` into a folder (`write_sentence_transformers`), with the subfolders of
    `settings.st_backends` (`backend_writers`).

    Raises:
        UserError: for "padded_mean" pooling, which sentence-transformers' Pooling cannot express, or
            a backend the ONNX graph cannot write.
    """
    if encoder.pooling == PADDED_MEAN:
        raise UserError(f"{settings.model}: its pooling averages the padding positions too (padded_mean, the "
                         "original PAUSE code's), which sentence-transformers' Pooling module cannot express; "
                         "export it with --format=tflite or --format=tfhub-bert (the backbone alone), or train "
                         "with the default mean pooling.")
    backends = backend_writers(encoder, settings)

    def write(folder: str) -> None:
        write_sentence_transformers(encoder, folder)
        for backend, write_backend in backends.items():
            tf.io.gfile.makedirs(artifacts.join(folder, backend))
            write_backend(artifacts.join(folder, backend))

    return write


def backend_writers(encoder: SentenceEncoder, settings: Any) -> Dict[str, Callable[[str], None]]:
    """For each of `settings.st_backends`, what writes its model file(s) into the backend's subfolder:
    the ONNX and OpenVINO exports' float32 graphs, converted now so that a failure writes nothing."""
    from common.models.formats import onnx as onnx_format
    from common.models.formats import openvino as openvino_format

    writers: Dict[str, Callable[[str], None]] = {}
    for backend in settings.st_backends:
        onnx_format.refuse_unsupported(encoder, settings.model, f"sentence-transformers --st_backends={backend}")
        if backend == "onnx":
            content = onnx_format.model_bytes(encoder)

            def write_onnx(folder: str, content: bytes = content) -> None:
                with tf.io.gfile.GFile(artifacts.join(folder, onnx_format.ONNX_FILE), "wb") as f:
                    f.write(content)

            writers[backend] = write_onnx
        else:
            writers[backend] = openvino_format.model_writer(openvino_format.converted(encoder))
    return writers


def record(settings: Any) -> Dict[str, Any]:
    """The backends' subfolders it carries, if any."""
    return {"st_backends": list(settings.st_backends)} if settings.st_backends else {}


def detect(path: str) -> Optional[str]:
    """`path` itself where it is a Hugging Face BERT or RoBERTa folder (sentence-transformers modules or
    not: the reader takes both), else None."""
    return path if is_hf_bert_dir(path) else None


def read(location: str, max_seq_len: Optional[int], precision: str) -> SentenceEncoder:
    """The folder's encoder, rebuilt (at any length and precision) with its weights."""
    return build_encoder(EncoderConfig(spec=location, max_seq_len=max_seq_len, precision=precision))
