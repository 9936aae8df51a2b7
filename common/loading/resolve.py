"""Any `--model` value to what a script uses: an embedding function (`resolve_model`: test_sts.py,
senteval_eval.py, cluster_eval.py, retrieval_eval.py and the API), a pair scorer (`resolve_cross_model`)
or the Keras encoder to export (`resolve_encoder`). A trained run and an untrained baseline are
scored by the same code; which kind of source a value names is decided in `common.models.sources`,
which format an export is in by the detectors of `common.models.formats`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import json
from typing import Callable, Dict, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf
from absl import logging

from common import artifacts
from common.artifacts import LATEST, model_path
from common.errors import UserError
from common.loading.embedding import embed_sentences, score_sentence_pairs
from common.models import formats
from common.models.encoder import EncoderConfig, SentenceEncoder, build_encoder
from common.models.sources.artifact import is_artifact_dir, trained_on as _trained_on
from common.models.sources.exported import (cross_saved_model as _cross_saved_model,
                                            embedding_saved_model as _embedding_saved_model,
                                            exported_length as _exported_length, is_saved_model_dir)
from common.models.sources.names import VALID_SPECS_HELP, canonical_spec
from common.models.precision import DEFAULT_PRECISION, check_precision, is_mixed

EMBEDDING_SUBDIR = "embedding"
CROSS_SUBDIR = "cross"
MODES = ("bi", "cross")


@dataclasses.dataclass
class Embedder:
    """A resolved model: a name for result files and a batch embedding function.

    Attributes:
        name: str. The run ID, or a file-name-safe form of the spec or path.
        source: str. What was loaded (path, URL or spec).
        embed_fn: callable. 1-D tf.string batch -> [batch, dim] embeddings.
        trained_on: tuple of str. Evaluation sets (SentEval task names) whose
            data the model was trained on, from its artifact's config.json.
        prompts: dict of str to str. The model's named prompts (a sentence-transformers
            folder's `prompts`); empty for other models.
        default_prompt_name: str or None. The prompt `embed` applies when given none, as
            sentence-transformers' `default_prompt_name`.
        prompted_fn: callable or None. A prompt -> an embedding function of texts that start
            with it and whose pooling leaves its tokens out (`SentenceEncoder.embedding_function`),
            for a model whose pooling excludes the prompt (`include_prompt` false); None otherwise.
    """

    name: str
    source: str
    embed_fn: object
    trained_on: Tuple[str, ...] = ()
    prompts: Dict[str, str] = dataclasses.field(default_factory=dict)
    default_prompt_name: Optional[str] = None
    prompted_fn: Optional[Callable[[str], object]] = None
    _prompted: Dict[str, object] = dataclasses.field(default_factory=dict, init=False, repr=False)

    def embed(self, sentences: Sequence[str], batch_size: int = 128, progress: bool = True,
              desc: str = "encoding", prompt: Optional[str] = None) -> np.ndarray:
        """Embeds `sentences` (`embed_sentences`), each after `prompt`.

        Args:
            prompt: str or None. A prefix of every sentence; None takes the model's default
                prompt (none where it names none), "" none. Defaults to None.
        """
        if prompt is None:
            prompt = self.prompts.get(self.default_prompt_name, "") if self.default_prompt_name else ""
        fn = self.embed_fn
        if prompt:
            sentences = [prompt + sentence for sentence in sentences]
            if self.prompted_fn is not None:
                if prompt not in self._prompted:
                    self._prompted[prompt] = self.prompted_fn(prompt)
                fn = self._prompted[prompt]
        return embed_sentences(fn, sentences, batch_size, progress, desc)


@dataclasses.dataclass
class CrossScorer:
    """A resolved cross-encoder: a name for result files and a pair scoring function.

    Attributes:
        name: str. The run ID, or a file-name-safe form of the path.
        source: str. The SavedModel that was loaded.
        score_fn: callable. (1-D tf.string batch, 1-D tf.string batch) -> [batch] scores.
        trained_on: tuple of str. Evaluation sets the model was trained on (config.json).
    """

    name: str
    source: str
    score_fn: object
    trained_on: Tuple[str, ...] = ()

    def score(self, sentences1: Sequence[str], sentences2: Sequence[str], batch_size: int = 128,
              progress: bool = True) -> np.ndarray:
        return score_sentence_pairs(self.score_fn, sentences1, sentences2, batch_size, progress)


def safe_name(text: str) -> str:
    """A file-name-safe version of a spec, URL or path."""
    text = re.sub(r"^[a-z]+://", "", text.rstrip("/"))
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "model"


def path_name(path: str) -> str:
    """A result-file name for a model given by path that no other path shares: the run ID of
    the artifact it belongs to (`model/<ID>` or `model/<ID>/embedding`); for an artifact
    written elsewhere (`--model_dir`, e.g. a run extended with --resume) the run ID, the
    folder's name and a hash of the path; else the folder's name and a hash of the path."""
    def digest(where: str) -> str:
        full = where if "://" in where else os.path.abspath(where)
        return hashlib.sha256(full.encode("utf-8")).hexdigest()[:8]

    path = path.rstrip("/")
    for candidate in (path, path.rsplit("/", 1)[0] if "/" in path else path):
        record = artifacts.join(candidate, "config.json")
        if tf.io.gfile.exists(record):
            with tf.io.gfile.GFile(record) as f:
                run_id = json.load(f).get("run_id")
            if run_id and artifacts.RUN_ID_PATTERN.match(str(run_id)):
                folder = os.path.basename(candidate.rstrip("/"))
                return str(run_id) if folder == run_id else f"{run_id}-{safe_name(folder)}-{digest(candidate)}"
    return f"{safe_name(os.path.basename(path))}-{digest(path)}"


def _require_gs_path(path: Optional[str]) -> None:
    """A `gs://` model that does not exist is "not found", naming a missing bucket, rather than "not a model"."""
    if not path or artifacts.bucket_of(path) is None or tf.io.gfile.exists(path):
        return
    artifacts.require_bucket(path)
    raise FileNotFoundError(f"{path}: no such object or directory in {artifacts.bucket_of(path)}.")






def _refuse_cross_encoder(path: str) -> None:
    """Raises when `path` (or its `cross/`) is a cross-encoder and no bi-encoder was found."""
    for candidate in (path, artifacts.join(path, CROSS_SUBDIR)):
        if is_saved_model_dir(candidate) and _cross_saved_model(candidate) is not None:
            raise UserError(
                f"{candidate} is a cross-encoder ((sentence1, sentence2) -> score): it scores pairs, it does not "
                f"embed sentences, so cosine similarity cannot score it. Run test_sts.py with --mode=cross.")


def resolve_cross_model(model: str, artifacts_dir: str = "artifacts", model_location: str = "local",
                        gcs_bucket: Optional[str] = None) -> CrossScorer:
    """Turns a `--model` value into a cross-encoder (`test_sts.py --mode=cross`).

    Args:
        model: str. A run ID whose artifact has `cross/`, an artifact directory,
            or a cross-encoder SavedModel ((sentence1, sentence2) -> score).

    Raises:
        UserError: for an encoder spec or a model without a cross-encoder, saying
            to use --mode=bi.
        FileNotFoundError: for a run ID or path that does not exist.
    """
    path = model_path(model, artifacts_dir, model_location, gcs_bucket)
    if path is None:
        raise UserError(f"--mode=cross needs a cross-encoder (a run ID or directory with {CROSS_SUBDIR}/, or a "
                         f"(sentence1, sentence2) -> score SavedModel); {model!r} is an encoder spec, a bi-encoder: "
                         "score it with --mode=bi.")
    _require_gs_path(path)
    if artifacts.RUN_ID_PATTERN.match(model) or model == LATEST:
        name = path.rstrip("/").rsplit("/", 1)[-1]
    else:
        name = safe_name(os.path.basename(model.rstrip("/")))
    for candidate in (artifacts.join(path, CROSS_SUBDIR), path):
        if is_saved_model_dir(candidate):
            fn = _cross_saved_model(candidate)
            if fn is not None:
                return CrossScorer(name, candidate, fn, _trained_on(path))
    raise UserError(f"{path}: no cross-encoder ({CROSS_SUBDIR}/saved_model.pb with a (sentence1, sentence2) -> "
                     "score signature); it is a bi-encoder or an encoder: score it with --mode=bi.")




def _encoder_embedder(name: str, source: str, encoder: SentenceEncoder, trained_on: Tuple[str, ...] = ()) -> Embedder:
    fn = encoder.embedding_function()

    def prompted_fn(prompt: str):
        return encoder.embedding_function(prompt_length=encoder.prompt_token_count(prompt))

    return Embedder(name, source, fn, trained_on, prompts=dict(encoder.prompts),
                    default_prompt_name=encoder.default_prompt_name,
                    prompted_fn=None if encoder.include_prompt else prompted_fn)




def _run_embedder(name: str, path: str, max_seq_len: Optional[int], precision: str) -> Embedder:
    """A train.py run: its published `embedding/` SavedModel where that is the encoder asked
    for (fp32, recording the length asked for, or any it records when none is asked for:
    a run publishes at the model's own maximum); else its encoder rebuilt from `weights/`."""
    trained_on = _trained_on(path)
    embedding = artifacts.join(path, EMBEDDING_SUBDIR)
    fn, length = None, None
    if not is_mixed(precision) and is_saved_model_dir(embedding):
        fn, loaded = _embedding_saved_model(embedding)
        length = _exported_length(loaded)
        if fn is not None and length is not None and max_seq_len in (None, length):
            return Embedder(name, embedding, fn, trained_on)
    config = EncoderConfig(spec=path, max_seq_len=max_seq_len, precision=precision)
    try:
        return _encoder_embedder(name, path, build_encoder(config), trained_on)
    except (OSError, ValueError) as e:  # e.g. the model the run started from is gone (a path, an uninstalled package)
        if fn is None or max_seq_len is not None:
            raise
        # A run published before SavedModels recorded their length: exported at the length it trained at.
        with tf.io.gfile.GFile(artifacts.join(path, "config.json")) as f:
            trained_at = json.load(f).get("encoder", {}).get("max_seq_len")
        logging.warning("%s: cannot rebuild its encoder at the model's own length (%s); scoring its embedding "
                        "SavedModel, which truncates at the %s tokens the run trained at.", path, e, trained_at)
        return Embedder(name, embedding, fn, trained_on)


def resolve_model(model: str, artifacts_dir: str = "artifacts", model_location: str = "local",
                  gcs_bucket: Optional[str] = None, max_seq_len: Optional[int] = None,
                  precision: str = DEFAULT_PRECISION) -> Embedder:
    """Turns a `--model` value into an Embedder.

    Args:
        model: str. A run ID (`YYYYMMDD-HHMMSS`) under `<artifacts_dir>/model/`,
            a local or `gs://` path (an artifact directory, an embedding
            SavedModel, a TF-Hub-format BERT or a Hugging Face BERT directory, a
            `.tflite` file or a folder holding `model.tflite`, an ONNX or OpenVINO
            export: any format of `common.models.formats`), or an encoder
            spec ("minilm", "tfhub_bert_small", "random_bert_tiny", a TF Hub URL, ...;
            `common.models.encoder`).
        artifacts_dir: str. Artifacts root for run IDs. Defaults to "artifacts".
        model_location: str. "local", or "gcs" to read run IDs from
            `gs://<gcs_bucket>/model/<ID>` as the original code did.
        gcs_bucket: str. Bucket name for `model_location="gcs"`.
        max_seq_len: int or None. Truncation length in tokens; None: the model's own
            maximum (sentence-transformers' `max_seq_length` where the model
            declares one, else its position embeddings), never the length a run
            trained at. A run asked for another length than its published
            SavedModel's is rebuilt from its `weights/`; an exported model
            (SavedModel, TFLite) takes only its own.
        precision: str. "fp32", "bf16" or "fp16" (`common.models.precision`).
            fp32 loads a run's exported `embedding/` SavedModel (float32); bf16
            and fp16 rebuild the run's encoder from its `weights/` in that
            precision. Exported SavedModels and TFLite files compute as exported
            and take only fp32. Defaults to "fp32".

    Raises:
        UserError: for an unknown form, listing the valid ones, or a precision
            the model cannot take.
        FileNotFoundError: for a run ID or path that does not exist.
    """
    check_precision(precision)
    path = model_path(model, artifacts_dir, model_location, gcs_bucket)
    _require_gs_path(path)
    if path is None:
        model = canonical_spec(model)  # results are named after the spec's new name
        name = safe_name(model)
    elif artifacts.RUN_ID_PATTERN.match(model) or model == LATEST:
        name = path.rstrip("/").rsplit("/", 1)[-1]
    else:
        name = path_name(path)
    if path is not None and is_artifact_dir(path):
        return _run_embedder(name, path, max_seq_len, precision)
    if path is not None:
        return _path_embedder(name, path, max_seq_len, precision)
    try:
        return _encoder_embedder(name, model, build_encoder(EncoderConfig(spec=model, max_seq_len=max_seq_len,
                                                                          precision=precision)))
    except ValueError as e:
        _raise_unknown_model(model, e)


def _path_embedder(name: str, path: str, max_seq_len: Optional[int], precision: str) -> Embedder:
    """A path that is not a run's directory: an export of one of `formats.FORMATS` (found by their
    detectors: an embedding SavedModel among them), else a TF-Hub-format BERT."""
    found = formats.find(path)
    if found is not None:
        module, location = found
        read = module.read(location, max_seq_len, precision)
        if isinstance(read, SentenceEncoder):
            return _encoder_embedder(name, location, read, _trained_on(path))
        return Embedder(name, location, read, _trained_on(path))
    _refuse_cross_encoder(path)
    if is_saved_model_dir(path):
        return _encoder_embedder(name, path, build_encoder(EncoderConfig(spec=path, max_seq_len=max_seq_len,
                                                                         precision=precision)))
    raise UserError(
        f"{path}: not a model directory; expected an artifact (embedding/saved_model.pb), "
        "an embedding SavedModel, a TF-Hub-format BERT SavedModel, a Hugging Face BERT or RoBERTa directory, "
        "a TFLite export (model.tflite) or an ONNX or OpenVINO export (model.onnx or openvino_model.xml beside "
        "vocab.txt and tokenizer_config.json)."
    )


def _raise_unknown_model(model: str, error: ValueError):
    """Re-raises an unknown encoder spec as the --model message naming every accepted form; else `error`."""
    if "Unknown encoder spec" in str(error):
        raise UserError(
            f"Unknown --model {model!r}. Valid forms: a run ID YYYYMMDD-HHMMSS under "
            f"<artifacts_dir>/model/, a local or gs:// path, or {VALID_SPECS_HELP}."
        ) from None
    raise error




def resolve_encoder(model: str, artifacts_dir: str = "artifacts", model_location: str = "local",
                    gcs_bucket: Optional[str] = None, max_seq_len: Optional[int] = None) -> SentenceEncoder:
    """Turns a `--model` value into the Keras encoder itself (weights, tokenizer, pooling), for export.

    Takes the values `resolve_model` takes, except exported models: an embedding
    SavedModel or a TFLite file holds a traced graph, not an encoder to rebuild. An
    export whose format's reader rebuilds an encoder (`common.models.formats`) is one.
    A run's `embedding/` folder stands for its run.

    Raises:
        UserError: for an exported model or an unknown form, naming what is accepted.
        FileNotFoundError: for a run ID or path that does not exist.
    """
    path = model_path(model, artifacts_dir, model_location, gcs_bucket)
    _require_gs_path(path)
    if path is None:
        spec = model
    else:
        parent = path.rstrip("/").rsplit("/", 1)[0] if "/" in path.rstrip("/") else "."
        if path.rstrip("/").endswith("/" + EMBEDDING_SUBDIR) and is_artifact_dir(parent):
            path = parent
        found = None if is_artifact_dir(path) else formats.find(path)
        if found is not None:
            module, location = found
            read = module.read(location, max_seq_len, DEFAULT_PRECISION)
            if isinstance(read, SentenceEncoder):
                return read
            raise UserError(f"{location} is an exported model: a traced graph without the encoder it came from. "
                             "Export the model it came from (a run ID or directory, a folder or a spec; an export's "
                             "export.json records it as \"source\").")
        if not (is_artifact_dir(path) or is_saved_model_dir(path)):
            raise UserError(f"{path}: no encoder to export; expected a run's directory (config.json, weights/), a "
                             "Hugging Face BERT directory (config.json, model.safetensors, vocab.txt or "
                             "tokenizer.json), a RoBERTa one (vocab.json "
                             "and merges.txt for vocab.txt) or a "
                             "TF-Hub-format BERT SavedModel.")
        spec = path
    try:
        return build_encoder(EncoderConfig(spec=spec, max_seq_len=max_seq_len))
    except ValueError as e:
        _raise_unknown_model(model, e)
