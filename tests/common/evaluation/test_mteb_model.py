"""MtebEncoder (common/evaluation/mteb_model.py) called as MTEB 2.x calls an encoder, with stand-ins
for MTEB's DataLoader, TaskMetadata, PromptType and ModelMeta: the suite does not install MTEB."""

import enum
import os
import subprocess
import sys
import types

import numpy as np
import pytest

from common import SentenceModel
from common.errors import UserError
from common.evaluation.mteb_model import MtebEncoder, prompt_name

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
TEXTS = ["A man is playing a guitar.", "Someone plays an instrument.", "", "Stocks fell on Monday.",
         "The quick brown fox jumps over the lazy dog."]


class PromptType(str, enum.Enum):
    """As MTEB's `mteb.types.PromptType`."""

    query = "query"
    document = "document"


def loader(texts, batch_size=2):
    """What MTEB's DataLoader yields for text: batches of dicts whose "text" holds the batch's texts."""
    return [{"id": [str(i) for i in range(start, start + batch_size)][:len(texts[start:start + batch_size])],
             "text": texts[start:start + batch_size]} for start in range(0, len(texts), batch_size)]


STS = types.SimpleNamespace(name="STSBenchmark", type="STS")
RETRIEVAL = types.SimpleNamespace(name="SciFact", type="Retrieval")


@pytest.fixture(scope="module")
def model():
    return SentenceModel("random_tiny", max_seq_len=32, prompts={"query": "query: ", "passage": "passage: "})


def test_encode_called_as_mteb_calls_it_equals_sentence_model_encode(model):
    encoder = MtebEncoder(model)
    got = encoder.encode(loader(TEXTS), task_metadata=STS, hf_split="test", hf_subset="default", prompt_type=None,
                         batch_size=3, show_progress_bar=False)
    assert isinstance(got, np.ndarray) and got.dtype == np.float32 and got.shape == (len(TEXTS), 32)
    np.testing.assert_allclose(got, model.encode(TEXTS), atol=1e-6)
    # Queries and documents get the model's prompts, as sentence-transformers' encode_query / encode_document.
    queries = encoder.encode(loader(TEXTS), task_metadata=RETRIEVAL, hf_split="test", hf_subset="default",
                             prompt_type=PromptType.query)
    np.testing.assert_allclose(queries, model.encode(TEXTS, prompt="query: "), atol=1e-6)
    documents = encoder.encode(loader(TEXTS), task_metadata=RETRIEVAL, hf_split="test", hf_subset="default",
                               prompt_type=PromptType.document)
    np.testing.assert_allclose(documents, model.encode(TEXTS, prompt="passage: "), atol=1e-6)
    assert not np.allclose(queries, documents, atol=1e-4)


def test_task_prompts_are_chosen_in_mtebs_order(model):
    prompts = {"query": "q: ", "Retrieval": "r: ", "Retrieval-query": "rq: ", "SciFact": "s: ",
               "SciFact-document": "sd: "}
    order = [(RETRIEVAL, PromptType.document, "SciFact-document"), (RETRIEVAL, PromptType.query, "SciFact"),
             (types.SimpleNamespace(name="Other", type="Retrieval"), PromptType.query, "Retrieval-query"),
             (types.SimpleNamespace(name="Other", type="Retrieval"), None, "Retrieval"),
             (STS, "query", "query"), (STS, None, None)]
    for task, kind, want in order:
        assert prompt_name(prompts, task, kind) == want, (task, kind)
    encoder = MtebEncoder(model, model_prompts={"STSBenchmark": "sts: "})
    assert encoder.prompts == {"query": "query: ", "passage": "passage: ", "STSBenchmark": "sts: "}
    got = encoder.encode(loader(TEXTS), task_metadata=STS, hf_split="test", hf_subset="default")
    np.testing.assert_allclose(got, model.encode(TEXTS, prompt="sts: "), atol=1e-6)


def test_a_model_default_prompt_applies_where_no_prompt_is_chosen():
    model = SentenceModel("random_tiny", max_seq_len=32, prompts={"document": "doc: "}, default_prompt_name="document")
    encoder = MtebEncoder(model)
    got = encoder.encode(loader(TEXTS), task_metadata=STS, hf_split="test", hf_subset="default",
                         prompt_type=PromptType.query)  # no "query" prompt: the default
    np.testing.assert_allclose(got, model.encode(TEXTS, prompt="doc: "), atol=1e-6)


def test_similarities_are_cosines(model):
    encoder = MtebEncoder(model)
    a, b = model.encode(TEXTS), model.encode(TEXTS[::-1])
    unit_a = a / np.linalg.norm(a, axis=1, keepdims=True)
    unit_b = b / np.linalg.norm(b, axis=1, keepdims=True)
    np.testing.assert_allclose(encoder.similarity(a, b), unit_a @ unit_b.T, atol=1e-6)
    # Two single embeddings: one number, as MTEB's summarization evaluator reads it.
    assert float(encoder.similarity(a[1], b[2])) == pytest.approx(float(unit_a[1] @ unit_b[2]), abs=1e-6)
    pairwise = encoder.similarity_pairwise(a, b)
    assert pairwise.shape == (len(TEXTS),)
    np.testing.assert_allclose(pairwise, np.sum(unit_a * unit_b, axis=1), atol=1e-6)


def test_model_meta_names_the_model_and_mteb_is_imported_only_for_it(model, monkeypatch):
    made = {}

    class ModelMeta:
        @classmethod
        def create_empty(cls, overwrites=None):
            made.update(overwrites)
            return cls()

    package = types.ModuleType("mteb")
    package.models = types.SimpleNamespace(ModelMeta=ModelMeta)
    monkeypatch.setitem(sys.modules, "mteb", package)
    monkeypatch.setitem(sys.modules, "mteb.models", package.models)
    encoder = MtebEncoder(model)
    assert isinstance(encoder.mteb_model_meta, ModelMeta) and encoder.mteb_model_meta is encoder.mteb_model_meta
    assert made == {"name": "local/random_tiny", "revision": None, "framework": ["TensorFlow"]}
    assert MtebEncoder(model, name="me/tiny", revision="v1").name == "me/tiny"
    proc = subprocess.run([sys.executable, "-c", "import sys, common.evaluation.mteb_model; "
                           "print('mteb' in sys.modules)"], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": ROOT})
    assert proc.returncode == 0 and proc.stdout.strip() == "False", proc.stderr[-2000:]


def test_what_it_cannot_take_is_one_clear_user_error(model):
    with pytest.raises(UserError, match="MtebEncoder wraps a SentenceModel"):
        MtebEncoder("minilm")
    with pytest.raises(UserError, match="MTEB names models 'organization/model'; got name='tiny'"):
        MtebEncoder(model, name="tiny")
    with pytest.raises(UserError, match=r"a batch without 'text' \(it has \['image'\]\); this toolkit embeds text"):
        MtebEncoder(model).encode([{"image": [0]}], task_metadata=STS, hf_split="test", hf_subset="default")
