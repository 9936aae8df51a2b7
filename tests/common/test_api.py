"""The Python API (common.api): SentenceModel.encode and similarity, and the README example."""

import contextlib
import datetime
import io
import os
import re
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from common import SentenceModel, artifacts, similarity
from common.loading.resolve import resolve_model
from common.export.saved_model import save_encoder_artifact

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SENTENCES = ["A man is playing a guitar.", "", "Crème brûlée, isn't it?",
             "The stock market fell sharply on Monday afternoon after the announcement."]


@pytest.fixture(scope="module")
def tiny_model():
    return SentenceModel("random_tiny", max_seq_len=32)


def _unit(x):
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def test_encode_equals_resolve_model_embed(tiny_model):
    want = resolve_model("random_tiny", max_seq_len=32).embed(SENTENCES, progress=False)
    got = tiny_model.encode(SENTENCES)
    assert got.dtype == np.float32 and got.shape == (len(SENTENCES), 32)
    np.testing.assert_allclose(got, want, atol=1e-6)
    for batch_size in (1, 3):  # other batches pad differently; the rows stay in the order given
        np.testing.assert_allclose(tiny_model.encode(SENTENCES, batch_size=batch_size), want, atol=1e-6)
    single = tiny_model.encode(SENTENCES[2])
    assert single.shape == (32,)
    np.testing.assert_allclose(single, want[2], atol=1e-6)
    # The tiny encoder does not normalise: normalize=True must.
    assert not np.allclose(np.linalg.norm(want, axis=1), 1.0)
    unit = tiny_model.encode(SENTENCES, normalize=True, show_progress_bar=True)
    np.testing.assert_allclose(unit, _unit(want), atol=1e-6)


def test_encode_takes_what_evaluation_harnesses_pass_as_sentence_transformers_does(tiny_model):
    plain = tiny_model.encode(SENTENCES)
    # Keyword arguments an evaluation harness passes for models that use them are ignored.
    harness = tiny_model.encode(SENTENCES, batch_size=2, task_name="STSBenchmark", prompt_type="query",
                                device="cpu", convert_to_numpy=True)
    np.testing.assert_allclose(harness, plain, atol=1e-6)
    np.testing.assert_allclose(tiny_model.encode(SENTENCES, normalize_embeddings=True), _unit(plain), atol=1e-6)
    tensor = tiny_model.encode(SENTENCES, convert_to_tensor=True)
    assert isinstance(tensor, tf.Tensor)
    np.testing.assert_allclose(tensor.numpy(), plain, atol=1e-6)
    # A prompt is a prefix of every sentence, given directly or by name.
    prefixed = tiny_model.encode(["query: " + s for s in SENTENCES])
    assert not np.allclose(prefixed, plain, atol=1e-4)
    np.testing.assert_allclose(tiny_model.encode(SENTENCES, prompt="query: "), prefixed, atol=1e-6)
    named = SentenceModel("random_tiny", max_seq_len=32, prompts={"query": "query: ", "passage": "passage: "})
    np.testing.assert_allclose(named.encode(SENTENCES, prompt_name="query"), prefixed, atol=1e-6)
    np.testing.assert_allclose(named.encode(SENTENCES, prompt_name="passage", prompt="query: "), prefixed,
                               atol=1e-6)  # prompt wins, as in sentence-transformers
    for kwargs, message in (({"prompt_name": "query"}, r"prompt_name='query' is not one of this model's prompts "
                                                         r"\[\]; pass prompts="),
                            ({"output_value": "token_embeddings"}, r"output_value='token_embeddings' is not offered"),
                            ({"precision": "int8"}, r"precision='int8' is not offered")):
        with pytest.raises(ValueError, match=message):
            tiny_model.encode(SENTENCES, **kwargs)
    with pytest.raises(ValueError, match="prompts must map names to prefix strings"):
        SentenceModel("random_tiny", prompts={"query": 1})


def test_similarity_is_the_cosine_matrix(tiny_model):
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(3, 8)), rng.normal(size=(5, 8))
    want = np.array([[x @ y / (np.linalg.norm(x) * np.linalg.norm(y)) for y in b] for x in a])
    got = similarity(a, b)
    assert got.shape == (3, 5) and got.dtype == np.float32
    np.testing.assert_allclose(got, want, atol=1e-6)
    np.testing.assert_allclose(similarity(a[1], b), want[1:2], atol=1e-6)  # one embedding is one row
    np.testing.assert_allclose(tiny_model.similarity(a, b), want, atol=1e-6)
    np.testing.assert_array_equal(similarity(np.zeros((1, 8)), b), np.zeros((1, 5)))  # no NaN, as sentence-transformers

    embedded = resolve_model("random_tiny", max_seq_len=32).embed(SENTENCES, progress=False)
    scores = tiny_model.similarity(tiny_model.encode(SENTENCES), tiny_model.encode(SENTENCES[:2]))
    assert scores.shape == (len(SENTENCES), 2)
    np.testing.assert_allclose(scores, _unit(embedded) @ _unit(embedded[:2]).T, atol=1e-6)


def test_similarity_refuses_what_is_not_two_sets_of_embeddings():
    with pytest.raises(ValueError, match="a has 8 dimensions and b 4"):
        similarity(np.ones((2, 8)), np.ones((2, 4)))
    with pytest.raises(ValueError, match="encode sentences first"):
        similarity(["a sentence"], np.ones((1, 4)))
    with pytest.raises(ValueError, match=r"b must be one embedding \[dim\] or a matrix \[n, dim\], got shape "
                                         r"\(1, 2, 4\)"):
        similarity(np.ones((2, 4)), np.ones((1, 2, 4)))


def test_run_ids_and_paths_load_as_test_sts_loads_them(tiny_encoder, tmp_path):
    root = str(tmp_path / "artifacts")
    run_id = artifacts.new_run_id(root, now=datetime.datetime(2026, 11, 22, 10, 15))
    final = save_encoder_artifact(tiny_encoder, artifacts.model_dir(root, run_id))
    want = tiny_encoder(tf.constant(SENTENCES))["embedding"].numpy()
    by_id = SentenceModel(run_id, artifacts_dir=root)
    assert by_id.name == run_id
    np.testing.assert_allclose(by_id.encode(SENTENCES), want, atol=1e-6)
    np.testing.assert_allclose(SentenceModel(final).encode(SENTENCES), want, atol=1e-6)


def test_user_errors_are_one_clear_value_error(tiny_model, tmp_path):
    with pytest.raises(ValueError, match=r"Unknown --model 'no-such-model'\. Valid forms: a run ID YYYYMMDD-HHMMSS.*"
                                         r"'minilm'") as error:
        SentenceModel("no-such-model")
    assert error.value.__cause__ is None and error.value.__suppress_context__
    for bad in ("", "  ", None, 3):
        with pytest.raises(ValueError, match=r"SentenceModel needs a model: an encoder spec such as 'minilm'"):
            SentenceModel(bad)
    with pytest.raises(ValueError, match="not a model directory"):
        SentenceModel(str(tmp_path))
    with pytest.raises(ValueError, match="sentences must be str, got int at index 1"):
        tiny_model.encode(["a sentence", 3])
    with pytest.raises(ValueError, match="no sentences given"):
        tiny_model.encode([])
    with pytest.raises(ValueError, match="batch_size must be >= 1, got 0"):
        tiny_model.encode(["a sentence"], batch_size=0)


def test_importing_common_loads_neither_the_api_nor_tensorflow():
    code = "import sys, common; print(sorted(m for m in ('common.api', 'tensorflow') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": ROOT})
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]"


def _readme_api_example() -> str:
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        text = f.read()
    heading = "## Quickstart"
    assert heading in text, f"README.md has no section {heading!r}"
    section = text.split(heading, 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(blocks) == 1, f"expected one python block in the README's quickstart, found {len(blocks)}"
    return blocks[0]


@pytest.mark.large
def test_readme_example_runs_as_written_and_prints_what_it_shows():
    code = _readme_api_example()
    shown = "\n".join(line[2:] for line in code.splitlines() if line.startswith("# "))
    namespace, printed = {}, io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, "README.md", "exec"), namespace)
    assert printed.getvalue().strip() == shown.strip()
    want = _unit(resolve_model("minilm").embed(namespace["sentences"], progress=False))
    assert namespace["embeddings"].shape == (3, 384)
    np.testing.assert_allclose(namespace["embeddings"], want, atol=1e-6)
    np.testing.assert_allclose(namespace["scores"], want @ want.T, atol=1e-6)
