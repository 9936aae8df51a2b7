"""A small Python API in the style of sentence-transformers, for use without a command line.

    from common import SentenceModel

    model = SentenceModel("minilm")  # any --model value: spec, run ID or path
    embeddings = model.encode(["A man is playing a guitar.", "Someone plays an instrument."])
    scores = model.similarity(embeddings, embeddings)  # [2, 2] cosine similarities

A model is resolved by `common.loading.resolve.resolve_model` and encoded by its
`Embedder.embed`, exactly as `test_sts.py` and the other evaluation scripts do. Users import both
names from `common` or `common.api`.
Where sentence-transformers names differ: its `normalize_embeddings` is `normalize`
here, its `max_seq_length` is `max_seq_len`.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Sequence, Union

import numpy as np

from common.errors import UserError
from common.models.precision import DEFAULT_PRECISION
from common.loading.resolve import resolve_model

# torch.nn.functional.normalize's default, which sentence-transformers' cos_sim uses:
# a zero vector gets similarity 0 to everything instead of NaN.
NORM_EPSILON = 1e-12


def _unit_rows(embeddings: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(embeddings, axis=-1, keepdims=True)  # [N, 1]
    return embeddings / np.maximum(norms, NORM_EPSILON)


def _as_matrix(embeddings, argument: str) -> np.ndarray:
    """[dim] or [N, dim] numbers -> float32 [N, dim]."""
    array = np.asarray(embeddings)
    if array.dtype.kind not in "fiu":
        raise UserError(f"similarity: {argument} must be embeddings (numbers, e.g. from encode()), "
                         f"got an array of dtype {array.dtype}; encode sentences first.")
    if array.ndim == 1:
        array = array[None, :]
    if array.ndim != 2:
        raise UserError(f"similarity: {argument} must be one embedding [dim] or a matrix [n, dim], "
                         f"got shape {array.shape}.")
    return array.astype(np.float32, copy=False)


def similarity(a, b) -> np.ndarray:
    """Cosine similarity of every row of `a` with every row of `b` (sentence-transformers' `cos_sim`).

    Args:
        a: array-like [n, dim] or [dim]. Embeddings.
        b: array-like [m, dim] or [dim]. Embeddings of the same width.

    Returns:
        float32 array [n, m] (a 1-D input counts as one row).

    Raises:
        UserError: for inputs that are not 1-D or 2-D numbers, or of different widths.

    Example:
        >>> from common import similarity
        >>> similarity([[1.0, 0.0], [1.0, 1.0]], [[2.0, 0.0], [0.0, 3.0], [-1.0, 0.0]]).round(2)
        array([[ 1.  ,  0.  , -1.  ],
               [ 0.71,  0.71, -0.71]], dtype=float32)
    """
    a, b = _as_matrix(a, "a"), _as_matrix(b, "b")
    if a.shape[1] != b.shape[1]:
        raise UserError(f"similarity: a has {a.shape[1]} dimensions and b {b.shape[1]}; "
                         "compare embeddings of the same model.")
    return _unit_rows(a) @ _unit_rows(b).T  # [n, m]


class SentenceModel:
    """A sentence encoder loaded from any `--model` value.

    Args:
        model: str. An encoder spec ("minilm", "random_tiny", "random_bert_tiny",
            "tfhub_bert_small", a TF Hub URL, ...), a run ID `YYYYMMDD-HHMMSS` or "latest" under
            `artifacts_dir`, or a local or `gs://` path (a run's artifact
            directory, an embedding SavedModel, a TF-Hub-format BERT, a Hugging
            Face BERT directory, or a TFLite, ONNX or OpenVINO export). The same values as
            `test_sts.py --model`.
        artifacts_dir: str. Root of the artifacts for run IDs. Defaults to "artifacts".
        model_location: str. "local", or "gcs" to read run IDs from
            `gs://<gcs_bucket>/model/<ID>`. Defaults to "local".
        gcs_bucket: str. Bucket for `model_location="gcs"`.
        max_seq_len: int. Truncation length in tokens (sentence-transformers'
            `max_seq_length`). Defaults to the model's own maximum (256 for MiniLM,
            else the position embeddings: 512 for BERTs), never the length a run
            trained at; a run is rebuilt from its weights for another length, an
            exported SavedModel or TFLite file takes only its own.
        precision: str. "fp32", "bf16" (Keras mixed_bfloat16: float32 weights,
            bfloat16 matmuls) or "fp16"; embeddings are float32 in each. bf16 and
            fp16 rebuild a run's encoder from its weights; an exported SavedModel
            or TFLite file takes only fp32. Defaults to "fp32".
        prompts: dict of str to str, or None. Named prefixes for `encode(...,
            prompt_name=...)`, as sentence-transformers' `prompts` (e.g.
            {"query": "query: ", "passage": "passage: "}), added to the model's own (a
            sentence-transformers folder's `prompts`; these win where both name one).
            Defaults to none.
        default_prompt_name: str or None. The prompt `encode` applies when given none; None
            takes the model's own (a sentence-transformers folder's `default_prompt_name`),
            if any. Defaults to None.

    Raises:
        UserError: for a value that is not a model, naming the valid forms, or a
            `default_prompt_name` that is not one of the prompts.
        FileNotFoundError: for a run ID or path that does not exist.

    Example:
        >>> from common import SentenceModel, similarity
        >>> model = SentenceModel("minilm")
        >>> embeddings = model.encode(["A man is playing a guitar.", "Someone plays an instrument."])
        >>> embeddings.shape
        (2, 384)
        >>> bool(similarity(embeddings, embeddings)[0, 1] > 0.3)
        True
    """

    def __init__(self, model: str = "minilm", artifacts_dir: str = "artifacts", model_location: str = "local",
                 gcs_bucket: Optional[str] = None, max_seq_len: Optional[int] = None,
                 precision: str = DEFAULT_PRECISION, prompts: Optional[Dict[str, str]] = None,
                 default_prompt_name: Optional[str] = None):
        if prompts is not None and not (isinstance(prompts, dict) and
                                        all(isinstance(k, str) and isinstance(v, str) for k, v in prompts.items())):
            raise UserError(f"SentenceModel: prompts must map names to prefix strings, e.g. "
                            f"{{'query': 'query: '}}; got {prompts!r}.")
        if not isinstance(model, str) or not model.strip():
            raise UserError(f"SentenceModel needs a model: an encoder spec such as 'minilm', a run ID "
                             f"YYYYMMDD-HHMMSS or a path; got {model!r}.")
        self._embedder = resolve_model(model, artifacts_dir=artifacts_dir, model_location=model_location,
                                       gcs_bucket=gcs_bucket, max_seq_len=max_seq_len, precision=precision)
        # As sentence-transformers merges them: the caller's prompts and default over the model's.
        self.prompts = {**self._embedder.prompts, **(prompts or {})}
        self.default_prompt_name = default_prompt_name or self._embedder.default_prompt_name
        if self.default_prompt_name is not None and self.default_prompt_name not in self.prompts:
            raise UserError(f"SentenceModel: default_prompt_name={self.default_prompt_name!r} is not one of the "
                            f"prompts {sorted(self.prompts)}; pass prompts={{{self.default_prompt_name!r}: '...'}}.")

    @property
    def name(self) -> str:
        """The run ID, or a file-name-safe form of the spec or path (as in result files)."""
        return self._embedder.name

    @property
    def source(self) -> str:
        """What was loaded: the SavedModel directory, the path or the spec."""
        return self._embedder.source

    def encode(self, sentences: Union[str, Sequence[str]], batch_size: int = 32, normalize: bool = False,
               show_progress_bar: bool = False, prompt: Optional[str] = None, prompt_name: Optional[str] = None,
               normalize_embeddings: Optional[bool] = None, convert_to_tensor: bool = False,
               output_value: str = "sentence_embedding", precision: str = "float32", **kwargs: Any):
        """Embeds sentences, in batches of similar length, in the order given.

        Called as sentence-transformers' `SentenceTransformer.encode` is, so evaluation
        harnesses that call `model.encode(sentences, batch_size=..., task_name=...,
        prompt_type=...)` (MTEB and the like) can take a SentenceModel as it is:
        keyword arguments this model has no use for (`task_name`, `prompt_type`,
        `device`, `convert_to_numpy`, ...) are accepted and ignored, as
        sentence-transformers ignores those its modules do not read.

        Args:
            sentences: str or sequence of str.
            batch_size: int. Sentences per forward pass. Defaults to 32.
            normalize: bool. L2-normalise each embedding; then a dot product is the
                cosine. Models that normalise already (MiniLM) are unchanged.
                Defaults to False.
            show_progress_bar: bool. A tqdm bar over the batches. Defaults to False.
            prompt: str or None. A prefix put before every sentence (e.g. "query: ");
                "" for none, even where the model has a default prompt.
            prompt_name: str or None. The name of one of the model's `prompts`;
                `prompt` wins when both are given, as in sentence-transformers. With
                neither, the `default_prompt_name`'s prompt applies, if any. A model
                whose pooling excludes the prompt (a sentence-transformers folder's
                `include_prompt: false`) pools the sentence's tokens only.
            normalize_embeddings: bool or None. sentence-transformers' name for
                `normalize`; either one set normalises.
            convert_to_tensor: bool. Return a tf.Tensor instead of a NumPy array.
            output_value: str. Only "sentence_embedding" (token embeddings are not
                returned by every model this class loads).
            precision: str. Only "float32" (quantised embeddings are not offered).
            **kwargs: accepted and ignored.

        Returns:
            float32 array [len(sentences), dim], or [dim] for a single str (a
            tf.Tensor of the same with `convert_to_tensor`).

        Raises:
            UserError: for an empty list, an item that is not a str, batch_size < 1,
                an unknown `prompt_name`, or an `output_value`/`precision` other
                than the ones above.
        """
        del kwargs  # what harnesses pass for models that use it (task names, prompt types, devices)
        if output_value != "sentence_embedding":
            raise UserError(f"encode: output_value={output_value!r} is not offered; expected "
                            "'sentence_embedding'.")
        if precision != "float32":
            raise UserError(f"encode: precision={precision!r} is not offered; expected 'float32' (quantise the "
                            "returned array yourself).")
        if prompt is None and prompt_name is not None:
            if prompt_name not in self.prompts:
                raise UserError(f"encode: prompt_name={prompt_name!r} is not one of this model's prompts "
                                f"{sorted(self.prompts)}; pass prompts={{{prompt_name!r}: '...'}} to SentenceModel.")
            prompt = self.prompts[prompt_name]
        elif prompt is None and self.default_prompt_name is not None:
            prompt = self.prompts[self.default_prompt_name]
        single = isinstance(sentences, str)
        batch = [sentences] if single else list(sentences)
        if not batch:
            raise UserError("encode: no sentences given; pass a str or a non-empty list of str.")
        for i, sentence in enumerate(batch):
            if not isinstance(sentence, str):
                raise UserError(f"encode: sentences must be str, got {type(sentence).__name__} at index {i}.")
        embeddings = self._embedder.embed(batch, batch_size=batch_size, progress=show_progress_bar,
                                          prompt=prompt or "")
        if normalize or normalize_embeddings:
            embeddings = _unit_rows(embeddings)
        out = embeddings[0] if single else embeddings
        if convert_to_tensor:
            import tensorflow as tf

            return tf.constant(out)
        return out

    similarity = staticmethod(similarity)

    def __repr__(self) -> str:
        return f"SentenceModel({self.source!r})"
