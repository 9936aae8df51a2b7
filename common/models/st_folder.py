"""Reading a sentence-transformers folder: the modules it applies around the transformer.

A folder that sentence-transformers (ST) saved lists its modules in `modules.json`, each in its own
subfolder: the transformer (at the folder's root), Pooling, then any Dense modules and Normalize.
This module reads the layout of every ST version and refuses, in one line naming the file, what this
toolkit does not implement:

- Pooling (`<n>_Pooling/config.json`). ST 6 writes one key, `"pooling_mode": "mean"` (a list for
  concatenated modes), beside `embedding_dimension` and `include_prompt`; earlier versions wrote one
  boolean per mode (`pooling_mode_mean_tokens`, `pooling_mode_cls_token`, ...) beside
  `word_embedding_dimension`. As ST reads them: the key wins over the booleans, and a config with
  no true boolean, or with neither, means "mean". "mean" and "cls" are implemented; ST's "max",
  "mean_sqrt_len_tokens", "weightedmean", "lasttoken" and concatenations of modes are refused.
- `include_prompt: false` leaves the prompt's tokens out of pooling (`SentenceEncoder.call`).
- Dense (`<n>_Dense/config.json`; `model.safetensors` with `linear.weight` [out, in] and
  `linear.bias`): activation(x W^T + b) on the pooled embedding, any width, with or without bias,
  Tanh or Identity. CLS pooling followed by a square Dense with bias and Tanh is BERT's pooler: it
  is read as pooling "pooler" (how `common.models.formats.sentence_transformers` writes it). Weights
  kept only in `pytorch_model.bin`, a residual connection, or a Dense after Normalize are refused.
- Normalize: an empty folder (before ST 6), a folder with `config.json` (ST 6), or no folder.
- The transformer's `sentence_bert_config.json`: `max_seq_length` before ST 6 (ST 6 writes none; the
  tokenizer's `model_max_length` holds the length, read by `common.models.encoder` for any folder)
  and `do_lower_case`.
- `config_sentence_transformers.json`: `prompts` and `default_prompt_name`.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Dict, List, Mapping, Optional, Tuple

import keras
import tensorflow as tf

from common.errors import UserError
from common.models import hf_weights

# ST's pooling modes, and the legacy boolean key of each in the order ST concatenates them.
LEGACY_POOLING_KEYS = {
    "pooling_mode_cls_token": "cls",
    "pooling_mode_max_tokens": "max",
    "pooling_mode_mean_tokens": "mean",
    "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len_tokens",
    "pooling_mode_weightedmean_tokens": "weightedmean",
    "pooling_mode_lasttoken": "lasttoken",
}
SUPPORTED_POOLING = ("mean", "cls")
# The class paths ST writes for a Dense module's activation (`activation_function`), and Keras' names.
TANH = "torch.nn.modules.activation.Tanh"
IDENTITY = "torch.nn.modules.linear.Identity"
ACTIVATIONS = {TANH: "tanh", IDENTITY: "linear"}
KERAS_TO_ST_ACTIVATION = {keras_name: path for path, keras_name in ACTIVATIONS.items()}
MODULE_KINDS = ("Transformer", "Pooling", "Dense", "Normalize")
WEIGHTS_FILE = "model.safetensors"
PYTORCH_WEIGHTS_FILE = "pytorch_model.bin"
# ST's own input to Dense and Normalize, the pooled embedding.
SENTENCE_EMBEDDING = "sentence_embedding"


def convert_hint(folder: str) -> str:
    """How a user turns a folder with `pytorch_model.bin` weights into one with safetensors."""
    out = folder.rstrip("/") + "-safetensors"
    return ("convert it with sentence-transformers, which writes model.safetensors for every module: "
            f"python -c \"from sentence_transformers import SentenceTransformer; "
            f"SentenceTransformer('{folder}').save('{out}')\", then load {out}")


@dataclasses.dataclass(frozen=True)
class DenseModule:
    """A sentence-transformers Dense module: activation(x W^T + b) on the pooled embedding.

    Attributes:
        path: str. The module's folder (its `model.safetensors` holds `linear.*`).
        in_features: int. Width of its input.
        out_features: int. Width of its output.
        bias: bool. Whether it adds `linear.bias`.
        activation: str. Keras' name of the activation: "tanh" or "linear" (ST's Identity).
    """

    path: str
    in_features: int
    out_features: int
    bias: bool
    activation: str

    def layer_config(self) -> Dict[str, Any]:
        """What `dense_layer` builds the module's Keras layer from."""
        return {"input_dim": self.in_features, "units": self.out_features, "use_bias": self.bias,
                "activation": self.activation}


@dataclasses.dataclass(frozen=True)
class FolderSettings:
    """What a sentence-transformers folder says about how to embed (all defaults: a plain HF folder).

    Attributes:
        pooling: str or None. "mean", "cls", or "pooler" (CLS then BERT's pooler as a Dense
            module); None where the folder has no modules.json.
        normalize: bool. A Normalize module ends the model.
        max_seq_len: int or None. `sentence_bert_config.json`'s `max_seq_length`.
        pooler_dir: str or None. The Dense module that is BERT's pooler, for pooling "pooler".
        dense: tuple of DenseModule. The other Dense modules, in order.
        include_prompt: bool. False: a prompt's tokens are left out of pooling.
        prompts: dict of str to str. Named prompts (`config_sentence_transformers.json`).
        default_prompt_name: str or None. The prompt that applies when none is asked for.
        lower_case_input: bool. `sentence_bert_config.json`'s `do_lower_case`: ST lower-cases the
            text before its tokenizer.
    """

    pooling: Optional[str] = None
    normalize: bool = False
    max_seq_len: Optional[int] = None
    pooler_dir: Optional[str] = None
    dense: Tuple[DenseModule, ...] = ()
    include_prompt: bool = True
    prompts: Mapping[str, str] = dataclasses.field(default_factory=dict)
    default_prompt_name: Optional[str] = None
    lower_case_input: bool = False


def _join(*parts: str) -> str:
    return "/".join([parts[0].rstrip("/"), *[p for p in parts[1:] if p]])


def read_json(path: str, named_by: Optional[str] = None) -> Any:
    """A JSON file's value; a missing or malformed file is a UserError naming it (and what names it)."""
    if not tf.io.gfile.exists(path):
        where = f" (named by {named_by})" if named_by else ""
        raise UserError(f"{path}: no such file{where}; copy the complete model folder again.")
    with tf.io.gfile.GFile(path, "r") as f:
        try:
            return json.load(f)
        except json.JSONDecodeError as e:
            raise UserError(f"{path}: not valid JSON ({e}); copy the file from the model's source again.") from None


def _kind(module: Mapping[str, Any]) -> str:
    return str(module.get("type", "")).rsplit(".", 1)[-1]


def pooling_mode(config: Mapping[str, Any], path: str) -> str:
    """The pooling mode of a Pooling `config.json` of any ST version ("mean" or "cls").

    Raises:
        UserError: for a mode this toolkit does not implement, or several concatenated.
    """
    if "pooling_mode" in config:
        mode = config["pooling_mode"]
        modes = [mode] if isinstance(mode, str) else list(mode or [])
    else:
        modes = [name for key, name in LEGACY_POOLING_KEYS.items() if config.get(key)]
    modes = modes or ["mean"]  # ST's default, for no true boolean too
    if len(modes) > 1:
        raise UserError(f"{path}: pooling modes {modes} (concatenated) are not supported; this toolkit pools "
                        f"with exactly one of {list(SUPPORTED_POOLING)}.")
    if modes[0] not in SUPPORTED_POOLING:
        raise UserError(f"{path}: pooling mode {modes[0]!r} is not supported; this toolkit implements "
                        f"{list(SUPPORTED_POOLING)} (sentence-transformers' 'max', 'mean_sqrt_len_tokens', "
                        "'weightedmean' and 'lasttoken' are not).")
    return modes[0]


def _dense_module(folder: str, config: Mapping[str, Any], path: str, width: int) -> DenseModule:
    """A Dense module's config, checked against what this toolkit applies and the width it receives."""
    activation = config.get("activation_function", TANH)  # ST's default
    if activation not in ACTIVATIONS:
        raise UserError(f"{path}: activation_function {activation!r} is not supported; this toolkit applies "
                        f"Dense modules with {sorted(ACTIVATIONS)}.")
    for key in ("module_input_name", "module_output_name"):
        if config.get(key) not in (None, SENTENCE_EMBEDDING):
            raise UserError(f"{path}: {key} {config[key]!r} is not supported; this toolkit applies Dense modules "
                            f"to the pooled embedding ({SENTENCE_EMBEDDING!r}).")
    if config.get("use_residual"):
        raise UserError(f"{path}: a Dense module with use_residual is not supported.")
    try:
        in_features, out_features = int(config["in_features"]), int(config["out_features"])
    except (KeyError, TypeError, ValueError):
        raise UserError(f"{path}: expected integer in_features and out_features; got {dict(config)}.") from None
    if in_features != width:
        raise UserError(f"{path}: in_features {in_features} does not match the {width}-wide embedding it "
                        "receives; the folder's modules do not fit together.")
    weights = _join(folder, WEIGHTS_FILE)
    if not tf.io.gfile.exists(weights):
        if tf.io.gfile.exists(_join(folder, PYTORCH_WEIGHTS_FILE)):
            raise UserError(f"{folder}: the Dense module's weights are in {PYTORCH_WEIGHTS_FILE} only; this "
                            f"toolkit reads safetensors: {convert_hint(folder.rsplit('/', 1)[0])}.")
        raise UserError(f"{weights}: no such file; a Dense module keeps its weights there. Copy the complete "
                        "model folder again.")
    return DenseModule(folder, in_features, out_features, bool(config.get("bias", True)), ACTIVATIONS[activation])


def _prompts(model_dir: str) -> Tuple[Dict[str, str], Optional[str]]:
    """`prompts` and `default_prompt_name` of `config_sentence_transformers.json` (none without one)."""
    path = _join(model_dir, "config_sentence_transformers.json")
    if not tf.io.gfile.exists(path):
        return {}, None
    config = read_json(path)
    prompts = config.get("prompts") or {}
    if not isinstance(prompts, dict) or not all(isinstance(k, str) and isinstance(v, (str, type(None)))
                                                for k, v in prompts.items()):
        raise UserError(f"{path}: prompts must map names to prompt strings; got {prompts!r}.")
    prompts = {name: text or "" for name, text in prompts.items()}  # ST: an unset prompt is ""
    default = config.get("default_prompt_name")
    if default is not None and default not in prompts:
        raise UserError(f"{path}: default_prompt_name {default!r} is not one of its prompts {sorted(prompts)}.")
    return prompts, default


def read_folder(model_dir: str, hidden_size: int) -> FolderSettings:
    """What a sentence-transformers folder applies around its transformer.

    Args:
        model_dir: str. Local or `gs://` folder.
        hidden_size: int. Width of the transformer's token outputs.

    Returns:
        FolderSettings; the defaults for a folder without `modules.json` (a plain Hugging Face one).

    Raises:
        UserError: for a module, pooling mode, Dense layout or file this toolkit cannot read, naming it.
    """
    modules_path = _join(model_dir, "modules.json")
    if not tf.io.gfile.exists(modules_path):
        return FolderSettings()
    modules = read_json(modules_path)
    if not (isinstance(modules, list) and modules and all(isinstance(m, dict) and "type" in m for m in modules)):
        raise UserError(f"{modules_path}: expected a list of modules, each with a type and a path; got {modules!r}.")
    unknown = [m["type"] for m in modules if _kind(m) not in MODULE_KINDS]
    if unknown:
        raise UserError(f"{modules_path}: module {unknown[0]!r} is not supported; this toolkit reads "
                        f"{' -> '.join(MODULE_KINDS)} (Dense and Normalize optional).")
    kinds = [_kind(m) for m in modules]
    if kinds[0] != "Transformer" or modules[0].get("path", ""):
        raise UserError(f"{modules_path}: the first module must be the Transformer at the folder's root; got "
                        f"{modules[0]['type']} in {modules[0].get('path')!r}. Save the model again with a current "
                        "sentence-transformers (SentenceTransformer(folder).save(new_folder)).")
    if kinds[1:2] != ["Pooling"] or "Pooling" in kinds[2:] or "Transformer" in kinds[1:]:
        raise UserError(f"{modules_path}: expected the Transformer, then one Pooling module; got {kinds}.")
    if "Normalize" in kinds and kinds.index("Normalize") != len(kinds) - 1:
        raise UserError(f"{modules_path}: only a last Normalize is supported (a module after it, as {kinds}, "
                        "would see normalised embeddings).")

    pooling_dir = _join(model_dir, modules[1].get("path", ""))
    pooling_path = _join(pooling_dir, "config.json")
    pooling_config = read_json(pooling_path, "modules.json")
    pooling = pooling_mode(pooling_config, pooling_path)
    include_prompt = bool(pooling_config.get("include_prompt", True))

    pooler_dir, dense, width = None, [], hidden_size
    for i, module in enumerate(modules[2:], start=2):
        folder = _join(model_dir, module.get("path", ""))
        if kinds[i] == "Normalize":
            config_path = _join(folder, "config.json")
            config = read_json(config_path) if tf.io.gfile.exists(config_path) else {}
            if config.get("module_input_name", SENTENCE_EMBEDDING) != SENTENCE_EMBEDDING:
                raise UserError(f"{config_path}: Normalize of {config['module_input_name']!r} is not supported; "
                                f"this toolkit normalises the sentence embedding.")
            continue
        config_path = _join(folder, "config.json")
        module_spec = _dense_module(folder, read_json(config_path, "modules.json"), config_path, width)
        is_pooler = (i == 2 and pooling == "cls" and include_prompt and module_spec.activation == "tanh"
                     and module_spec.bias and module_spec.in_features == module_spec.out_features == hidden_size)
        if is_pooler:
            pooler_dir, pooling = folder, "pooler"
        else:
            dense.append(module_spec)
        width = module_spec.out_features

    max_seq_len, lower_case_input = None, False
    st_path = _join(model_dir, "sentence_bert_config.json")
    if tf.io.gfile.exists(st_path):
        st_config = read_json(st_path)
        if st_config.get("max_seq_length"):
            max_seq_len = int(st_config["max_seq_length"])
        lower_case_input = bool(st_config.get("do_lower_case", False))
    prompts, default_prompt_name = _prompts(model_dir)
    return FolderSettings(pooling=pooling, normalize="Normalize" in kinds, max_seq_len=max_seq_len,
                          pooler_dir=pooler_dir, dense=tuple(dense), include_prompt=include_prompt, prompts=prompts,
                          default_prompt_name=default_prompt_name, lower_case_input=lower_case_input)


# === Keras layers ===


def dense_layer(config: Mapping[str, Any], index: int) -> keras.layers.Dense:
    """The Keras layer of a Dense module (`DenseModule.layer_config`), built, float32 (it follows the
    encoder's float32 pooling in every precision)."""
    layer = keras.layers.Dense(config["units"], use_bias=config["use_bias"], activation=config["activation"],
                               dtype="float32", name=f"dense_{index}")
    layer.build((None, config["input_dim"]))
    return layer


def dense_weight_map(layer: keras.layers.Dense) -> List[hf_weights.HFTensor]:
    """A Dense module's two PyTorch `Linear` tensors (`linear.weight` [out, in], `linear.bias`) and the
    layer's variables holding them: what loading and exporting both read."""
    in_features, units = (int(d) for d in layer.kernel.shape)
    entries = [hf_weights.HFTensor("linear.weight", layer.kernel, (units, in_features), linear=True)]
    if layer.use_bias:
        entries.append(hf_weights.HFTensor("linear.bias", layer.bias, (units,)))
    return entries


def load_dense(layer: keras.layers.Dense, module: DenseModule) -> None:
    """Copies a Dense module's `model.safetensors` into its layer."""
    path = _join(module.path, WEIGHTS_FILE)
    hf_weights.assign_hf_tensors(dense_weight_map(layer), hf_weights.hf_tensors(path), path)
