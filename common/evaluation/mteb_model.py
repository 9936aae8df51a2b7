"""A `SentenceModel` as an MTEB 2.x encoder, without MTEB as a dependency of this toolkit.

MTEB 2.x (`mteb.evaluate`) runs a model that follows its `EncoderProtocol`
(`mteb.models.models_protocols`): `encode(inputs, *, task_metadata, hf_split, hf_subset,
prompt_type=None, **kwargs)`, where `inputs` is a DataLoader of batches (dicts whose "text"
holds the batch's texts) and the answer an array [n, dim]; `similarity` and
`similarity_pairwise`; and `mteb_model_meta`, an `mteb.models.ModelMeta` that names the model
(its name and revision key MTEB's result cache). `mteb.evaluate` wraps a sentence-transformers model
itself, and takes any other model as it is when it has `mteb_model_meta`; a model without it is
not run. MTEB 1.x called `model.encode(sentences, **kwargs)` instead, which `SentenceModel` takes
as it is.

    import mteb
    from common import SentenceModel
    from common.evaluation.mteb_model import MtebEncoder

    model = MtebEncoder(SentenceModel("artifacts/model/20261122-101500"))
    results = mteb.evaluate(model, mteb.get_tasks(tasks=["STSBenchmark"]))

Prompts are chosen as MTEB's sentence-transformers wrapper chooses them, from the model's prompts
(`SentenceModel.prompts`) and the `model_prompts` given here: the first of "<task name>-<prompt
type>", "<task name>", "<task type>-<prompt type>", "<task type>" and "<prompt type>" that names one;
else, as sentence-transformers' `encode_query` / `encode_document`, the "query" prompt for queries
and the first of "document", "passage", "corpus" for documents; else the model's default prompt.

Only `mteb_model_meta` imports MTEB, when it is first read.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, Mapping, Optional

import numpy as np

from common.loading.sentence_model import SentenceModel, _unit_rows
from common.errors import UserError

# sentence-transformers' encode_document looks for these prompt names, in this order.
DOCUMENT_PROMPTS = ("document", "passage", "corpus")


def _value(prompt_type: Any) -> Optional[str]:
    """MTEB's `PromptType` (a str enum) or a plain string as its value; None as None."""
    return None if prompt_type is None else str(getattr(prompt_type, "value", prompt_type))


def prompt_name(prompts: Mapping[str, str], task_metadata: Any, prompt_type: Any) -> Optional[str]:
    """The prompt MTEB's sentence-transformers wrapper picks for a task and prompt type, by name.

    Args:
        prompts: dict of str to str. Prompt names (task names, task types, prompt types or
            "<task>-<prompt type>") to prompts.
        task_metadata: MTEB's `TaskMetadata` (or anything with `name` and `type`).
        prompt_type: MTEB's `PromptType` ("query" or "document"), a str, or None.

    Returns:
        The name found, or None.
    """
    task_name, task_type = getattr(task_metadata, "name", None), getattr(task_metadata, "type", None)
    kind = _value(prompt_type)
    candidates = [f"{task_name}-{kind}" if task_name and kind else None, task_name,
                  f"{task_type}-{kind}" if task_type and kind else None, task_type, kind]
    return next((name for name in candidates if name and name in prompts), None)


class MtebEncoder:
    """A `SentenceModel` as MTEB 2.x's `EncoderProtocol` expects it.

    Args:
        model: SentenceModel.
        name: str or None. The model's name in MTEB's results, "organization/model"; None:
            "local/<model.name>" (the run ID, or the spec or path made file-name safe).
        revision: str or None. The revision recorded with the results; None: MTEB's
            "no_revision_available".
        model_prompts: dict of str to str, or None. Prompts by task name, task type or
            prompt type (MTEB's `model_prompts`), over the model's own prompts. Defaults to none.

    Raises:
        UserError: for a model that is not a SentenceModel, or a name without "/".
    """

    def __init__(self, model: SentenceModel, name: Optional[str] = None, revision: Optional[str] = None,
                 model_prompts: Optional[Dict[str, str]] = None):
        if not isinstance(model, SentenceModel):
            raise UserError(f"MtebEncoder wraps a SentenceModel, e.g. MtebEncoder(SentenceModel('minilm')); got "
                            f"{type(model).__name__}.")
        self.model = model
        self.name = name or f"local/{model.name}"
        if "/" not in self.name:
            raise UserError(f"MtebEncoder: MTEB names models 'organization/model'; got name={self.name!r}.")
        self.revision = revision
        self.prompts = {**model.prompts, **(model_prompts or {})}
        self._meta = None

    def prompt(self, task_metadata: Any, prompt_type: Any = None) -> Optional[str]:
        """The prompt for a task and prompt type (see the module docstring); None: the model's default."""
        name = prompt_name(self.prompts, task_metadata, prompt_type)
        if name is None:
            kind = _value(prompt_type)
            fallbacks = ("query",) if kind == "query" else DOCUMENT_PROMPTS if kind == "document" else ()
            name = next((n for n in fallbacks if n in self.prompts), None)
        return None if name is None else self.prompts[name]

    def encode(self, inputs: Iterable[Mapping[str, Any]], *, task_metadata: Any, hf_split: Optional[str] = None,
               hf_subset: Optional[str] = None, prompt_type: Any = None, **kwargs: Any) -> np.ndarray:
        """Embeds every text of `inputs`, in order.

        Args:
            inputs: MTEB's DataLoader (any iterable of batches): each batch a dict whose "text"
                holds its texts.
            task_metadata: MTEB's `TaskMetadata`: its `name` and `type` choose the prompt.
            hf_split: str or None. Unused (a model may tell languages apart by it).
            hf_subset: str or None. Unused.
            prompt_type: MTEB's `PromptType` ("query" / "document") or None.
            **kwargs: MTEB's `encode_kwargs`: `batch_size` (default 32), `show_progress_bar`
                and `precision` are passed on; the rest is ignored.

        Returns:
            float32 array [number of texts, dim].

        Raises:
            UserError: for a batch without "text" (this toolkit embeds text only).
        """
        del hf_split, hf_subset  # what MTEB passes for models that use them
        texts = []
        for batch in inputs:
            if "text" not in batch:
                raise UserError(f"MtebEncoder: a batch without 'text' (it has {sorted(batch)}); this toolkit "
                                "embeds text only.")
            texts.extend(batch["text"])
        options = {key: kwargs[key] for key in ("show_progress_bar", "precision") if key in kwargs}
        return self.model.encode(texts, batch_size=int(kwargs.get("batch_size", 32)),
                                 prompt=self.prompt(task_metadata, prompt_type), **options)

    def similarity(self, embeddings1, embeddings2) -> np.ndarray:
        """Cosine similarity of every row of `embeddings1` with every row of `embeddings2` [n, m]; of two
        single embeddings [dim], a 0-d array: MTEB's summarization evaluator takes `float()` of it,
        which NumPy allows of 0-d arrays only (PyTorch of any one-element tensor)."""
        a, b = np.asarray(embeddings1), np.asarray(embeddings2)
        scores = self.model.similarity(a, b)
        return scores[0, 0] if a.ndim == b.ndim == 1 else scores

    def similarity_pairwise(self, embeddings1, embeddings2) -> np.ndarray:
        """Cosine similarity of each row of `embeddings1` with the same row of `embeddings2` [n]."""
        a = _unit_rows(np.atleast_2d(np.asarray(embeddings1, np.float32)))
        b = _unit_rows(np.atleast_2d(np.asarray(embeddings2, np.float32)))
        return np.sum(a * b, axis=-1)

    @property
    def mteb_model_meta(self):
        """`mteb.models.ModelMeta` naming the model (imports MTEB when first read)."""
        if self._meta is None:
            from mteb.models import ModelMeta

            self._meta = ModelMeta.create_empty(overwrites={"name": self.name, "revision": self.revision,
                                                            "framework": ["TensorFlow"]})
        return self._meta
