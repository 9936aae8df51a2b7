"""Any encoder spec to its encoder: one module per kind of source, one table that tells them apart.

| kind | what `--model` names | module |
| --- | --- | --- |
| fresh | "random_tiny", "random_bert_*", a `bert_config.json`: a randomly initialised BERT | `fresh` |
| hf | "minilm", a Hugging Face BERT or RoBERTa folder, a sentence-transformers folder | `hf_folder` |
| hub | "tfhub_bert_*", a TF Hub URL, a TF-Hub-format BERT SavedModel | `hub` |
| artifact | a run ID, "latest" or a train.py run's directory | `artifact` |
| exported | an embedding or cross-encoder SavedModel, a TFLite model (scored, not rebuilt) | `exported` |

`build` builds the Keras encoder of the first four, of the class it is given
(`common.models.build_encoder` and `SentenceEncoder.from_preset` give theirs, as keras-hub's
`from_preset` hands its class to the preset loader), so that no source imports the encoder it
builds. Exported models are not rebuilt: `common.loading` reads them (`exported`, the readers of
`common.models.formats`) and turns any `--model` (run IDs, "latest", exports, specs) into what embeds.

`max_seq_len` means one thing everywhere: the tokens (special ones included) the encoder
truncates at; None takes the model's own (`parts.max_seq_len_of`). Training passes its
`--max_seq_len` (default 128, what the papers trained at); evaluation and export pass theirs
(default None: the model's own, as sentence-transformers does).
"""

from __future__ import annotations

import dataclasses
import os
from typing import Callable, Tuple, Type, TypeVar

import tensorflow as tf

from common.errors import UserError
from common.models import precision as precision_lib
from common.models.encoder_config import EncoderConfig
from common.models.sources import artifact, fresh, hf_folder, hub
from common.models.sources.exported import is_saved_model_dir
from common.models.sources.names import FRESH_BERTS, VALID_SPECS_HELP, canonical_spec, minilm_dir, missing_path_error
from common.models.sources.parts import assemble

# The kinds a directory can be, in the order they are tried (a run's directory also holds a config.json).
FOLDER_KINDS: Tuple[Tuple[str, Callable[[str], bool]], ...] = (
    ("artifact", artifact.is_artifact_dir), ("hf", hf_folder.is_hf_bert_dir), ("hub", is_saved_model_dir))
# How each kind of source becomes its parts (the artifact kind rebuilds its start, then reads its weights).
LOADERS = {"fresh": fresh.load, "hf": hf_folder.load, "hub": hub.load}
# The encoder class a caller builds (`SentenceEncoder` or a subclass).
Encoder = TypeVar("Encoder")


@dataclasses.dataclass(frozen=True)
class Source:
    """What an encoder spec names: its kind (FOLDER_KINDS, "fresh") and where it is."""

    kind: str
    location: str


def locate_spec(spec: str) -> Source:
    """The kind and location of an encoder spec (a name, URL, path or bert_config.json; old spellings too).

    Raises:
        UserError: for a name or directory that is none of the kinds, listing the valid specs.
        FileNotFoundError: for a bert_config.json that does not exist.
    """
    spec = canonical_spec(spec)
    if spec == "minilm":
        return Source("hf", minilm_dir())
    if spec == "random_tiny" or spec in FRESH_BERTS:
        return Source("fresh", spec)
    if fresh.is_config_file(spec):
        if not tf.io.gfile.exists(spec):
            raise FileNotFoundError(f"--model={spec}: no such BERT configuration file.")
        return Source("fresh", spec)
    if spec in hub.TFHUB_HANDLES:
        return Source("hub", hub.TFHUB_HANDLES[spec])
    if hub.is_hub_handle(spec):
        return Source("hub", spec)
    if spec.startswith("gs://") or os.path.isdir(spec):
        for kind, detect in FOLDER_KINDS:
            if detect(spec):
                return Source(kind, spec)
        raise UserError(
            f"{spec}: neither a train.py artifact (config.json, weights/), a Hugging Face BERT directory "
            "(config.json, model.safetensors, vocab.txt or tokenizer.json), a RoBERTa one (config.json with "
            "model_type 'roberta', model.safetensors, vocab.json + merges.txt) nor a SavedModel directory "
            "(saved_model.pb)."
        )
    missing = missing_path_error(spec)
    if missing is not None:
        raise missing
    raise UserError(f"Unknown encoder spec {spec!r}; {VALID_SPECS_HELP}.")


def build(cls: Type[Encoder], config: EncoderConfig) -> Encoder:
    """Builds the encoder of class `cls` that `config.spec` names, with its weights loaded
    (`common.models.build_encoder` is this for `SentenceEncoder`).

    `config.precision` None takes Keras' global dtype policy (`common.models.precision.resolve_precision`);
    the encoder records the precision it computes in.

    Raises:
        UserError: for an unknown spec or an inconsistent model directory.
        FileNotFoundError: when a required file is missing.
    """
    if config.precision is not None:
        precision_lib.check_precision(config.precision)
    config = dataclasses.replace(config, spec=canonical_spec(config.spec))  # what the encoder records
    source = locate_spec(config.spec)
    if config.precision is None:
        # A TF Hub graph computes as it was saved (float32): the global policy cannot change it,
        # where an explicit bf16 or fp16 is refused by `hub.load`.
        precision = precision_lib.DEFAULT_PRECISION if source.kind == "hub" else precision_lib.global_precision()
        config = dataclasses.replace(config, precision=precision)
    if source.kind == "artifact":  # the run's start is any source, its weights the run's
        return artifact.restore(build(cls, artifact.start_config(source.location, config)), source.location)
    return assemble(cls, LOADERS[source.kind](source.location, config), config)


__all__ = ["FOLDER_KINDS", "LOADERS", "Source", "build", "locate_spec"]
