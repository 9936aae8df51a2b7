"""absl flags shared by the scripts, defined once; training flags are generated from the configs."""

from __future__ import annotations

import dataclasses
import typing
from typing import Dict, List, Sequence, Tuple

from absl import flags

from common.artifacts import MODEL_LOCATIONS
from common.errors import UserError
from common.training import registry
from common.training.config import SECTIONS, EncoderSection, RunSection, TrainConfig, field_types, flag_name


def _run_field(name: str) -> dataclasses.Field:
    return next(f for f in dataclasses.fields(RunSection) if f.name == name)


def define_data_flags() -> None:
    """--data_path, as training defines it (`RunSection.data_path`)."""
    field = _run_field("data_path")
    flags.DEFINE_string("data_path", field.default, field.metadata["help"])


def define_artifact_flags() -> None:
    """--artifacts_dir, as training defines it (`RunSection.artifacts_dir`)."""
    field = _run_field("artifacts_dir")
    flags.DEFINE_string("artifacts_dir", field.default, field.metadata["help"])


def define_model_flags(default_model: str = "minilm", batch_size: bool = True) -> None:
    """--model and where to find it, for evaluation scripts; `batch_size=False` leaves out
    --batch_size and --precision, for scripts that encode nothing (export.py)."""
    flags.DEFINE_string(
        "model", default_model,
        "Run ID under --artifacts_dir/model, a local or gs:// path, or an encoder spec "
        "(minilm, tfhub_bert_small, tfhub_bert_base: pretrained; random_bert_tiny ... random_bert_base: fresh, "
        "no pretraining; a TF Hub URL, a Hugging Face BERT or RoBERTa directory).")
    define_artifact_flags()
    flags.DEFINE_enum("model_location", "local", MODEL_LOCATIONS,
                      "Where run IDs live: local (--artifacts_dir) or gcs (gs://<--gcs_bucket>/model/<ID>).")
    flags.DEFINE_string("gcs_bucket", None, "Bucket for --model_location=gcs.")
    flags.DEFINE_integer("max_seq_len", None,
                         "Truncation length in tokens, [CLS] and [SEP] included; default: the model's own maximum "
                         "(sentence-transformers' max_seq_length, 256 for MiniLM, else its position embeddings, 512 "
                         "for BERTs), never the length a run trained at (train.py's --max_seq_len, default 128, is "
                         "the length it trains at). An exported model takes only its own.")
    if batch_size:
        flags.DEFINE_integer("batch_size", 128, "Sentences per encoding batch.", lower_bound=1)
        # As training defines it (`EncoderSection.precision`); a string checked by resolve_model,
        # so that a bad value is one line and exit code 2.
        field = next(f for f in dataclasses.fields(EncoderSection) if f.name == "precision")
        flags.DEFINE_string("precision", field.default, field.metadata["help"])


# === Training flags, generated from the configs of the registered methods ===


def _flag_kind(annotation, field):
    """The absl DEFINE function for a config field's type."""
    if typing.get_origin(annotation) is typing.Union:  # Optional[X]
        annotation = next(a for a in typing.get_args(annotation) if a is not type(None))
    if field.metadata.get("choices"):
        return "enum"
    if typing.get_origin(annotation) is tuple:
        return "list"
    return {bool: "bool", int: "integer", float: "float", str: "string"}[annotation]


def _format_default(value) -> str:
    if isinstance(value, tuple):
        return ",".join(value) if value else "''"
    if isinstance(value, str):
        return value or "''"
    return str(value)


def _defaults_help(name: str, owners: Sequence[str]) -> str:
    by_method = {m: _format_default(registry.get(m).default_of(name)) for m in owners}
    if len(set(by_method.values())) == 1:
        return f"[default: {next(iter(by_method.values()))}]"
    return "[" + "; ".join(f"{m}: {v}" for m, v in by_method.items()) + "]"


def define_train_flags(flag_values: flags.FlagValues = flags.FLAGS) -> Dict[str, List[str]]:
    """Defines --method and one flag per config field of every registered method.

    Every flag defaults to None ("the method's default", shown in its help), so a
    flag that was given can be told from one that was not. Shared flags are
    listed under "train.py: every method" in --helpfull, the others under the
    methods that use them.

    Returns:
        Flag name -> names of the methods that use it.
    """
    found = registry.methods()
    flags.DEFINE_enum("method", "pause", list(found), "Training method: " + "; ".join(
        f"{name}: {m.description}" for name, m in found.items()), flag_values=flag_values)
    owners: Dict[str, List[str]] = {}
    fields: Dict[str, Tuple[dataclasses.Field, type]] = {}
    for name, method in found.items():
        for cls in (*SECTIONS.values(), method.options):
            types = field_types(cls)
            for field in dataclasses.fields(cls):
                flag = flag_name(field)
                owners.setdefault(flag, []).append(name)
                kind = _flag_kind(types[field.name], field)
                if flag in fields and _flag_kind(fields[flag][1], fields[flag][0]) != kind:
                    raise ValueError(f"Setting --{flag} has different types in different methods.")
                fields.setdefault(flag, (field, types[field.name]))
    # absl.logging defines --log_dir for log files it writes only on request; the
    # original PAUSE flag of that name (the TensorBoard directory) takes its place.
    if "log_dir" in flag_values:
        delattr(flag_values, "log_dir")
    for flag, (field, annotation) in fields.items():
        users = owners[flag]
        module = "train.py: every method" if len(users) == len(found) else "method " + ", ".join(users)
        help_text = f"{field.metadata.get('help', '')} {_defaults_help(flag, users)}"
        kind = _flag_kind(annotation, field)
        args = dict(flag_values=flag_values, module_name=module)
        if kind == "enum":
            flags.DEFINE_enum(flag, None, list(field.metadata["choices"]), help_text, **args)
        else:
            getattr(flags, f"DEFINE_{kind}")(flag, None, help_text, **args)
    return owners


def given_settings(flag_values: flags.FlagValues, names: Sequence[str]) -> Dict[str, object]:
    """The settings given on the command line (flags left unset are not included)."""
    return {name: flag_values[name].value for name in names if flag_values[name].present}


def train_config_from_flags(flag_values: flags.FlagValues, owners: Dict[str, List[str]]) -> TrainConfig:
    """The TrainConfig the command line asks for.

    Raises:
        UserError: for a flag that the chosen method does not use (naming it and
            the methods that do), or flags given with --resume that it would ignore.
    """
    given = given_settings(flag_values, list(owners))
    method = flag_values["method"].value
    if given.get("resume"):
        from common.training.run_settings import load_run_config, resume_changes

        saved = load_run_config(flag_values["artifacts_dir"].value or RunSection.artifacts_dir, given["resume"])
        if flag_values["method"].present and method != saved.method:
            raise UserError(f"--resume={given['resume']} is a {saved.method} run, not --method={method}; "
                             "resume without --method.")
        resumed = saved.replace(**given)
        resume_changes(saved, resumed)  # refuses, naming them, the settings a resumed run may not change
        return resumed
    unused = [name for name in given if method not in owners[name]]
    if unused:
        details = "; ".join(f"--{n} is a setting of {', '.join(owners[n])}" for n in unused)
        raise UserError(f"--method={method} does not use {', '.join('--' + n for n in unused)} ({details}). "
                         "Remove the flag, or choose the method it belongs to.")
    return registry.build_config(method, given)
