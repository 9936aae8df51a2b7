"""SentenceEncoder as a Keras 3 layer in users' models: strings in, embeddings out; fit, `.keras`
files with the vocabulary as assets, `model.export` / `tf.saved_model.save` loadable with TensorFlow
and tensorflow-text only, Keras' global mixed-precision policy; and docs/usage/keras.md as written."""

import json
import os
import re
import subprocess
import sys
import warnings
import zipfile

import keras
import numpy as np
import pytest
import tensorflow as tf

from common.errors import UserError
from common.models import EncoderConfig, SentenceEncoder, build_encoder
from common.models.encoder import MERGES_ASSET, VOCABULARY_ASSET

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SENTENCES = ["Who was Galileo ?", "How far is it from Denver to Aspen ?", "", "Crème brûlée, isn't it?"]
# The tiny random BERT of the tests (1 layer, hidden 32), short sentences.
TINY = dict(max_seq_len=32)


def _strings(sentences=SENTENCES) -> tf.Tensor:
    return tf.constant(sentences)


def _classifier(encoder, functional: bool, classes: int = 6) -> keras.Model:
    head = keras.layers.Dense(classes, name="head")
    if functional:
        inputs = keras.Input(shape=(), dtype="string")
        return keras.Model(inputs, head(encoder(inputs)))
    return keras.Sequential([keras.Input(shape=(), dtype="string"), encoder, head])


@pytest.fixture
def global_policy():
    """Sets Keras' global dtype policy for one test and puts float32 back after it."""
    yield keras.mixed_precision.set_global_policy
    keras.mixed_precision.set_global_policy("float32")


# === The layer ===


def test_from_preset_embeds_strings_in_sequential_and_functional_models():
    encoder = SentenceEncoder.from_preset("random_tiny", **TINY)
    want = build_encoder(EncoderConfig(spec="random_tiny", **TINY)).embed_strings(_strings()).numpy()
    embedding = encoder(_strings())
    assert embedding.shape == (len(SENTENCES), 32) and embedding.dtype == tf.float32
    np.testing.assert_allclose(embedding.numpy(), want, atol=1e-6)
    for functional in (False, True):
        model = _classifier(encoder, functional)
        head = model.get_layer("head")
        np.testing.assert_allclose(model(_strings()).numpy(), head(want).numpy(), atol=1e-5)
        assert model.predict(tf.data.Dataset.from_tensor_slices(SENTENCES).batch(3), verbose=0).shape == (4, 6)
    # Every output on request, the same embedding among them.
    outputs = SentenceEncoder.from_preset("random_tiny", output_mode="dict", **TINY)(_strings())
    assert set(outputs) == {"sequence_output", "padding_mask", "token_ids", "pooler_output", "pooled", "embedding"}
    np.testing.assert_allclose(outputs["embedding"].numpy(), want, atol=1e-6)
    # Pooling and normalisation as asked.
    normalized = SentenceEncoder.from_preset("random_tiny", normalize=True, pooling="cls", **TINY)(_strings())
    np.testing.assert_allclose(normalized.numpy(), tf.math.l2_normalize(outputs["sequence_output"][:, 0], -1),
                               atol=1e-6)
    with pytest.raises(UserError, match=r"output_mode must be one of embedding, dict; got 'tokens'"):
        SentenceEncoder.from_preset("random_tiny", output_mode="tokens")


def test_fit_trains_every_encoder_weight_with_dropout_and_trainable_false_freezes_it():
    encoder = SentenceEncoder.from_preset("random_tiny", **TINY)
    assert not np.allclose(encoder(_strings(), training=True), encoder(_strings()), atol=1e-4)  # dropout
    model = _classifier(encoder, functional=False)
    model.compile(optimizer=keras.optimizers.SGD(0.5),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    labels = np.array([0, 1, 2, 3])
    with tf.GradientTape() as tape:
        logits = model(_strings(), training=True)
        loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)(labels, logits)
    gradients = tape.gradient(loss, encoder.trainable_weights)
    # BERT's pooler is frozen when it does not pool (it would get no gradient); every other weight learns.
    learnable = [w.path for w in encoder.weights if w.dtype == "float32" and "pooled_dense" not in w.path]
    # Every layer's 16 weights at least.
    assert [w.path for w in encoder.trainable_weights] == learnable
    assert len(learnable) >= 16 * len(encoder.backbone.transformer_layers)
    assert all(g is not None for g in gradients), [w.path for w, g in zip(encoder.trainable_weights, gradients)
                                                   if g is None]
    before = encoder(_strings()).numpy()
    model.fit(_strings(), labels, epochs=1, batch_size=4, verbose=0)
    assert not np.allclose(encoder(_strings()).numpy(), before, atol=1e-4)

    frozen = SentenceEncoder.from_preset("random_tiny", trainable=False, **TINY)
    assert frozen.trainable_weights == []
    model = _classifier(frozen, functional=True)
    model.compile(optimizer=keras.optimizers.SGD(0.5),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    before = frozen(_strings()).numpy()
    head_before = model.get_layer("head").get_weights()[0].copy()
    model.fit(_strings(), labels, epochs=1, batch_size=4, verbose=0)
    np.testing.assert_array_equal(frozen(_strings()).numpy(), before)
    assert not np.array_equal(model.get_layer("head").get_weights()[0], head_before)


# === SavedModels of a user's model ===

# Runs in a fresh interpreter that imports nothing of this project.
SAVED_MODEL_LOADER = """
import json, sys
import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401  registers the tokenizer ops
paths, sentences, out = json.loads(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3]
results = []
for path in paths:
    loaded = tf.saved_model.load(path)
    signature = loaded.signatures["serving_default"]
    (name, spec), = signature.structured_input_signature[1].items()
    assert spec.dtype == tf.string and spec.shape.as_list() == [None], spec
    results.append(next(iter(signature(**{name: tf.constant(sentences)}).values())).numpy())
    if hasattr(loaded, "serve"):  # model.export's endpoint
        np.testing.assert_array_equal(loaded.serve(tf.constant(sentences)).numpy(), results[-1])
assert not [m for m in sys.modules if m.split(".")[0] in ("common", "keras_hub")], "project code was imported"
np.save(out, np.stack(results))
"""


def _run_clean(code: str, *args: str, cwd: str) -> subprocess.CompletedProcess:
    """`code` in a fresh interpreter that does not have this repository on its path."""
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, "PYTHONPATH": ""})


def test_export_and_saved_model_save_of_a_users_model_serve_strings_without_the_toolkit(tmp_path):
    encoder = SentenceEncoder.from_preset("random_tiny", **TINY)
    paths, wants = [], []
    for functional in (False, True):
        model = _classifier(encoder, functional)
        wants += [model(_strings()).numpy()] * 2
        paths.append(str(tmp_path / f"export_{functional}"))
        model.export(paths[-1], verbose=False)
        paths.append(str(tmp_path / f"saved_{functional}"))
        tf.saved_model.save(model, paths[-1])
    out = str(tmp_path / "out.npy")
    result = _run_clean(SAVED_MODEL_LOADER, json.dumps(paths), json.dumps(SENTENCES), out, cwd=str(tmp_path))
    assert result.returncode == 0, result.stderr[-3000:]
    served = np.load(out)
    for path, got, want in zip(paths, served, wants):
        np.testing.assert_allclose(got, want, atol=1e-5, err_msg=path)


# === .keras files ===

KERAS_LOADER = """
import json, sys
import numpy as np
import keras
import tensorflow as tf
path, sentences, out = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
try:
    keras.saving.load_model(path)
    message = None
except Exception as error:
    message = str(error)
import common.models  # noqa: F401  registers the toolkit's Keras classes
model = keras.saving.load_model(path)
np.save(out, model(tf.constant(sentences)).numpy())
print(json.dumps(message))
"""


def test_keras_file_holds_the_vocabulary_as_assets_and_loads_only_with_the_toolkit(tmp_path):
    model = _classifier(SentenceEncoder.from_preset("random_tiny", **TINY), functional=True)
    want = model(_strings()).numpy()
    path = str(tmp_path / "model.keras")
    model.save(path)
    with zipfile.ZipFile(path) as archive:
        config = archive.read("config.json").decode()
        vocabulary = json.loads(archive.read(f"assets/layers/sentence_encoder/{VOCABULARY_ASSET}"))
    assert "[unused0]" not in config and len(config) < 5000
    assert vocabulary == model.layers[1].tokenizer.vocabulary
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "had a build config, but ... cannot be built" warning
        reloaded = keras.saving.load_model(path)
    np.testing.assert_array_equal(reloaded(_strings()).numpy(), want)

    out = str(tmp_path / "out.npy")
    result = subprocess.run([sys.executable, "-c", KERAS_LOADER, path, json.dumps(SENTENCES), out],
                            capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": ROOT})
    assert result.returncode == 0, result.stderr[-3000:]
    message = json.loads(result.stdout.strip().splitlines()[-1])
    # Without the toolkit: Keras' short message naming the class and the module to import.
    assert "Could not locate class 'SentenceEncoder'" in message and "'common.models.encoder'" in message
    assert len(message) < 4000 and "[unused0]" not in message
    np.testing.assert_array_equal(np.load(out), want)


def test_a_bpe_tokenizer_keeps_its_merges_as_assets(tmp_path):
    from fixtures import write_hf_roberta_dir

    encoder = SentenceEncoder.from_preset(write_hf_roberta_dir(str(tmp_path / "rb")), max_seq_len=16)
    model = _classifier(encoder, functional=False, classes=3)
    path = str(tmp_path / "roberta.keras")
    model.save(path)
    with zipfile.ZipFile(path) as archive:
        merges = archive.read(f"assets/layers/sentence_encoder/{MERGES_ASSET}").decode().split("\n")
    assert [m for m in merges if m] == encoder.tokenizer.merges
    np.testing.assert_array_equal(keras.saving.load_model(path)(_strings()).numpy(), model(_strings()).numpy())


def test_a_config_that_holds_the_vocabulary_still_loads(tmp_path):
    encoder = SentenceEncoder.from_preset("random_tiny", **TINY)
    config = encoder.get_config()
    assert "vocabulary" not in config and config["tokenizer_type"] == "wordpiece"
    # The form get_config wrote before the vocabulary became an asset.
    old = {k: v for k, v in config.items() if k not in ("tokenizer_type", "output_mode")}
    old["vocabulary"] = encoder.tokenizer.vocabulary
    clone = SentenceEncoder.from_config(old)
    clone.load_assets(str(tmp_path))  # nothing there: its tokenizer came with the config
    clone.set_weights(encoder.get_weights())
    np.testing.assert_allclose(clone.embed_strings(_strings()), encoder.embed_strings(_strings()), atol=1e-6)
    assert clone.output_mode == "dict"  # what every encoder returned then
    # Rebuilt from the config alone, it says where its vocabulary comes from.
    bare = SentenceEncoder.from_config(config)
    with pytest.raises(ValueError, match="has no vocabulary yet"):
        bare(_strings())
    with pytest.raises(UserError, match=rf"no {VOCABULARY_ASSET} among its assets"):
        bare.load_assets(str(tmp_path))


# === Mixed precision ===


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.sum(a * b, 1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


@pytest.mark.parametrize("policy,precision,compute", [("mixed_bfloat16", "bf16", "bfloat16"),
                                                      ("mixed_float16", "fp16", "float16")])
def test_the_global_mixed_policy_is_followed_and_an_explicit_precision_wins(global_policy, policy, precision,
                                                                            compute):
    fp32 = SentenceEncoder.from_preset("random_tiny", **TINY)(_strings()).numpy()
    global_policy(policy)
    mixed = SentenceEncoder.from_preset("random_tiny", **TINY)
    assert mixed.encoder_config.precision == precision
    layers = [mixed.backbone, mixed.backbone.token_embedding, *mixed.backbone.transformer_layers]
    assert {layer.compute_dtype for layer in layers} == {compute}
    assert {w.dtype for w in mixed.weights} == {"float32"}
    embedding = mixed(_strings())
    assert embedding.dtype == tf.float32
    assert not np.array_equal(embedding.numpy(), fp32)  # computed in the half type
    assert np.all(_cosines(embedding.numpy(), fp32) > 0.99)
    # The same encoder as precision= gives it, and an explicit fp32 wins over the policy.
    np.testing.assert_array_equal(
        embedding.numpy(), SentenceEncoder.from_preset("random_tiny", precision=precision, **TINY)(_strings()))
    np.testing.assert_array_equal(SentenceEncoder.from_preset("random_tiny", precision="fp32", **TINY)(_strings()),
                                  fp32)


def test_a_global_policy_the_encoder_cannot_follow_is_a_user_error(global_policy, tmp_path):
    global_policy("bfloat16")
    with pytest.raises(UserError, match=r"global dtype policy is 'bfloat16'; the encoder follows 'float32', "
                                        r"'mixed_bfloat16' or 'mixed_float16'"):
        SentenceEncoder.from_preset("random_tiny", **TINY)


def test_a_tf_hub_bert_stays_float32_under_a_mixed_policy(global_policy, tmp_path):
    from common.models.bert import BertBackbone
    from common.models.bert_config import BertConfig
    from common.models.sources.fresh import randomize_weights
    from common.models.sources.names import TINY_BERT, minilm_dir
    from fixtures import write_tfhub_bert

    backbone = BertBackbone(BertConfig(vocab_size=30522, **{**TINY_BERT, "num_layers": 2}))  # layers read in order
    randomize_weights(backbone, 0)
    hub = write_tfhub_bert(str(tmp_path / "hub"), backbone, os.path.join(minilm_dir(), "vocab.txt"))
    global_policy("mixed_bfloat16")
    assert SentenceEncoder.from_preset(hub, **TINY).encoder_config.precision == "fp32"
    with pytest.raises(UserError, match="--precision=bf16 needs a BERT built by this toolkit"):
        SentenceEncoder.from_preset(hub, precision="bf16", **TINY)


# === docs/usage/keras.md ===

# What the page's example is given in the suite: a tiny random encoder, a few questions, two steps.
PAGE_SETTINGS = {"PRESET": '"random_tiny"', "STEPS": "2"}


def _page_code(data_path: str) -> str:
    with open(os.path.join(ROOT, "docs", "usage", "keras.md"), encoding="utf-8") as f:
        blocks = re.findall(r"```python\n(.*?)```", f.read(), re.S)
    code = "\n".join(blocks)
    for name, value in {**PAGE_SETTINGS, "DATA_PATH": repr(data_path)}.items():
        code, count = re.subn(rf"^{name} = .*$", f"{name} = {value}", code, flags=re.M)
        assert count == 1, f"docs/usage/keras.md should set {name} once, at the start of a line"
    return code


def test_the_keras_page_runs_as_written_on_a_tiny_encoder(tmp_path, monkeypatch, global_policy):
    from senteval_fixtures import write_trec

    data = str(tmp_path / "data")
    write_trec(data)
    monkeypatch.chdir(tmp_path)
    namespace = {}
    exec(compile(_page_code(data), "docs/usage/keras.md", "exec"), namespace)
    assert 0.0 <= namespace["accuracy"] <= 1.0 and 0.0 <= namespace["probe_accuracy"] <= 1.0
    assert namespace["logits"].shape == (2, 6)
    want = namespace["model"](tf.constant(["Who was Galileo ?", "How far is it from Denver to Aspen ?"]))
    np.testing.assert_allclose(namespace["logits"].numpy(), want.numpy(), atol=1e-5)
    assert namespace["bf16_encoder"].encoder_config.precision == "bf16"
    assert namespace["fp32_encoder"].encoder_config.precision == "fp32"
    assert keras.config.dtype_policy().name == "float32"
