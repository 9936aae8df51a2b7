"""export.py: Hugging Face / sentence-transformers folders, TFLite models, embedding SavedModels and TF-Hub-format
BERTs, and what loads them back.

The toolkit's own loader (`--model=<folder>`) must give the exported model's embeddings
to 1e-5, for a tiny random BERT and for a trained run; keras-hub must read the same
folder (its BertBackbone computes GELU with the tanh approximation, so it matches our
encoder run with that activation); the TFLite model must match the SavedModel.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from common import SentenceModel
from common.loading.resolve import resolve_encoder, resolve_model
from common.export import ExportConfig, export_model
from common.models.bert import BertBackbone
from common.models.encoder import SentenceEncoder, build_encoder
from common.models.sources.names import TINY_BERT, minilm_dir
from common.models.encoder import EncoderConfig
from common.export.sentence_transformers_folder import tokenizer_json, write_sentence_transformers
from common.models.tokenization import BertTokenizer, TokenizerConfig
from common.training import registry
from common.training.runs import train
from fixtures import rebuilt_from_config
from in_process import run_script
from numpy_bert import bert_mean_pooled, bert_pooler_output

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
# Plain ASCII: keras-hub's tokenizer does not strip accents, so only such text tokenizes alike there.
ASCII = ["A man is playing a guitar.", "", "Stocks fell sharply on Monday, didn't they?",
         "The quick brown fox jumps over the lazy dog " * 4]
SENTENCES = ASCII + ["Crème brûlée, isn't it?"]


@pytest.fixture(scope="module")
def tiny_export(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("export") / "tiny-st")
    export_model(ExportConfig(model="random_tiny", format="sentence-transformers", out=out, max_seq_len=32))
    return out


@pytest.fixture(scope="module")
def large_weights_export(tmp_path_factory):
    """An export of a random BERT with weights of scale 0.2 (tests/fixtures.py): unlike the tiny
    encoder's 0.02, its activations reach where the tanh and exact GELU differ."""
    from fixtures import write_hf_bert_dir

    root = tmp_path_factory.mktemp("large-weights")
    source = write_hf_bert_dir(str(root / "hf"), os.path.join(minilm_dir(), "vocab.txt"))
    out = str(root / "st")
    with pytest.raises(ValueError, match="max_seq_len 128 exceeds the model's 64 position embeddings; give "
                                         "--max_seq_len=64 or less"):
        export_model(ExportConfig(model=source, format="sentence-transformers", out=out, max_seq_len=128))
    # Without --max_seq_len a folder that declares no max_seq_length is used at its position embeddings.
    export_model(ExportConfig(model=source, format="sentence-transformers", out=out))
    assert json.load(open(os.path.join(out, "sentence_bert_config.json")))["max_seq_length"] == 64
    return out


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory):
    """A SimCSE run on the tiny BERT (CLS pooling at test time), published under its artifacts root."""
    root = tmp_path_factory.mktemp("run")
    settings = {**registry.get("simcse").smoke(str(root / "data")), "artifacts_dir": str(root / "artifacts"),
                "train_epochs": 1, "train_steps_per_epoch": 2, "eval_each_epoch": False}
    result = train(registry.build_config("simcse", settings))
    return str(root / "artifacts"), result["run_id"]


def _approximate_gelu_twin(encoder: SentenceEncoder) -> SentenceEncoder:
    """`encoder` with keras-hub's tanh GELU and the same weights."""
    config = encoder.get_config()
    config["backbone"]["bert"] = {**config["backbone"]["bert"], "activation": "gelu_approximate"}
    twin = rebuilt_from_config(encoder, config)
    twin.backbone.set_weights(encoder.backbone.get_weights())
    assert twin.encoder_config == encoder.encoder_config
    return twin


def test_the_toolkit_loads_its_hugging_face_export_back_to_1e_5(tiny_export):
    want = SentenceModel("random_tiny", max_seq_len=32).encode(SENTENCES)
    reloaded = SentenceModel(tiny_export)
    np.testing.assert_allclose(reloaded.encode(SENTENCES), want, atol=1e-5)
    config = resolve_encoder(tiny_export).encoder_config
    assert (config.pooling, config.normalize, config.max_seq_len) == ("mean", False, 32)
    files = set(os.listdir(tiny_export))
    assert {"config.json", "model.safetensors", "vocab.txt", "tokenizer.json", "tokenizer_config.json",
            "modules.json", "sentence_bert_config.json", "1_Pooling", "export.json"} <= files
    assert "2_Normalize" not in files  # the tiny encoder does not normalise
    modules = json.load(open(os.path.join(tiny_export, "modules.json")))
    assert [m["type"].rsplit(".", 1)[1] for m in modules] == ["Transformer", "Pooling"]
    record = json.load(open(os.path.join(tiny_export, "export.json")))
    assert record["source"] == "random_tiny" and record["files"]["model.safetensors"] > 0


def test_the_exported_checkpoint_reads_right_without_this_toolkit(tiny_export):
    """A NumPy BERT that reads Hugging Face names and layouts (tests/numpy_bert.py) gives our
    token outputs: the keys, transposes and head splits are Hugging Face's, not only our own inverse."""
    encoder = resolve_encoder("random_tiny", max_seq_len=32)
    tokens = encoder.tokenize(tf.constant(SENTENCES))
    want = bert_mean_pooled(tiny_export, tokens["token_ids"].numpy(), tokens["padding_mask"].numpy())
    np.testing.assert_allclose(encoder(tf.constant(SENTENCES))["pooled"].numpy(), want, atol=1e-4)


def test_the_exported_tokenizer_json_gives_our_token_ids(tiny_export):
    from tokenizers import Tokenizer

    hf = Tokenizer.from_file(os.path.join(tiny_export, "tokenizer.json"))
    vocabulary = resolve_encoder(tiny_export).tokenizer.vocabulary
    ours = BertTokenizer(vocabulary, TokenizerConfig(max_seq_len=10000))  # tokenizer.json does not truncate
    out = ours(tf.constant(SENTENCES))
    for i, sentence in enumerate(SENTENCES):
        assert hf.encode(sentence).ids == out["token_ids"].numpy()[i][out["padding_mask"].numpy()[i] == 1].tolist()
    # The same rules as MiniLM's own tokenizer.json (whose ids the tokenizer tests hold on every STS sentence).
    minilm = json.load(open(os.path.join(minilm_dir(), "tokenizer.json")))
    vocabulary = open(os.path.join(minilm_dir(), "vocab.txt"), encoding="utf-8").read().splitlines()
    written = tokenizer_json(vocabulary, lowercase=True)
    for key in ("added_tokens", "normalizer", "pre_tokenizer", "post_processor", "decoder", "model"):
        assert written[key] == minilm[key], key


def test_a_trained_run_exports_and_loads_back_to_1e_5(trained_run, tmp_path):
    artifacts_dir, run_id = trained_run
    out = str(tmp_path / "run-st")
    record = export_model(ExportConfig(model=run_id, format="sentence-transformers", out=out,
                                       artifacts_dir=artifacts_dir))
    assert record["encoder"]["pooling"] == "cls"
    pooling = json.load(open(os.path.join(out, "1_Pooling", "config.json")))
    assert pooling["pooling_mode_cls_token"] and not pooling["pooling_mode_mean_tokens"]
    # The run's published embedding SavedModel against the export, each through resolve_model.
    published = resolve_model(run_id, artifacts_dir=artifacts_dir)
    assert published.source.endswith("embedding")
    want = published.embed(SENTENCES, progress=False)
    np.testing.assert_allclose(SentenceModel(out).encode(SENTENCES), want, atol=1e-5)
    # Its embedding/ folder names the same run; the SavedModel alone has no encoder to export.
    embedding = os.path.join(artifacts_dir, "model", run_id, "embedding")
    assert resolve_encoder(embedding).encoder_config.pooling == "cls"
    bare = str(tmp_path / "bare")
    os.rename(embedding, bare)
    try:
        with pytest.raises(ValueError, match="is an exported model: a traced graph.*Export the model it came from"):
            resolve_encoder(bare)
    finally:
        os.rename(bare, embedding)


@pytest.mark.parametrize("normalize", [False, True])
def test_pooler_pooling_exports_as_a_dense_module_and_loads_back_exactly(normalize, tmp_path):
    """BERT's pooler goes out twice, bit for bit: as `pooler.dense.*` (transformers' `pooler_output`)
    and as the Dense module that sentence-transformers applies after CLS pooling; it comes back."""
    from fixtures import write_hf_bert_dir
    from safetensors.numpy import load_file

    source = write_hf_bert_dir(str(tmp_path / "hf"), os.path.join(minilm_dir(), "vocab.txt"))
    encoder = build_encoder(EncoderConfig(spec=source, pooling="pooler", normalize=normalize, max_seq_len=64))
    out = tmp_path / "st"
    out.mkdir()
    write_sentence_transformers(encoder, str(out))
    modules = json.load(open(out / "modules.json"))
    kinds = ["Transformer", "Pooling", "Dense"] + ["Normalize"] * normalize
    assert [m["type"].rsplit(".", 1)[1] for m in modules] == kinds
    assert [m["path"] for m in modules] == ["", "1_Pooling", "2_Dense"] + ["3_Normalize"] * normalize
    assert all((out / m["path"]).is_dir() for m in modules)
    pooling = json.load(open(out / "1_Pooling" / "config.json"))
    assert pooling["pooling_mode_cls_token"] and not pooling["pooling_mode_mean_tokens"]
    assert json.load(open(out / "2_Dense" / "config.json")) == {
        "in_features": 32, "out_features": 32, "bias": True, "activation_function": "torch.nn.modules.activation.Tanh"}
    original = load_file(os.path.join(source, "model.safetensors"))
    model, dense = load_file(out / "model.safetensors"), load_file(out / "2_Dense" / "model.safetensors")
    for name in ("weight", "bias"):
        np.testing.assert_array_equal(model[f"pooler.dense.{name}"], original[f"bert.pooler.dense.{name}"])
        np.testing.assert_array_equal(dense[f"linear.{name}"], original[f"bert.pooler.dense.{name}"])

    reloaded = build_encoder(EncoderConfig(spec=str(out)))
    config = reloaded.encoder_config
    assert (config.pooling, config.normalize, config.max_seq_len) == ("pooler", normalize, 64)
    want = encoder(tf.constant(ASCII))["embedding"].numpy()
    np.testing.assert_allclose(reloaded(tf.constant(ASCII))["embedding"].numpy(), want, atol=1e-6)
    if not normalize:  # transformers' pooler_output, from the folder alone
        tokens = encoder.tokenize(tf.constant(ASCII))
        np.testing.assert_allclose(bert_pooler_output(str(out), tokens["token_ids"].numpy(),
                                                      tokens["padding_mask"].numpy()), want, atol=1e-4)


def test_a_dense_module_other_than_berts_pooler_is_a_dense_layer_after_cls_pooling(tmp_path):
    from fixtures import write_hf_bert_dir
    from safetensors.numpy import load_file

    source = write_hf_bert_dir(str(tmp_path / "hf"), os.path.join(minilm_dir(), "vocab.txt"))
    out = tmp_path / "st"
    out.mkdir()
    write_sentence_transformers(build_encoder(EncoderConfig(spec=source, pooling="pooler", max_seq_len=64)), str(out))
    config = out / "2_Dense" / "config.json"
    config.write_text(config.read_text().replace("activation.Tanh", "linear.Identity"))
    encoder = build_encoder(EncoderConfig(spec=str(out)))
    assert encoder.encoder_config.pooling == "cls" and len(encoder.dense_layers) == 1
    dense = load_file(out / "2_Dense" / "model.safetensors")
    out = encoder(tf.constant(ASCII))
    want = out["sequence_output"].numpy()[:, 0] @ dense["linear.weight"].T + dense["linear.bias"]  # no tanh
    np.testing.assert_allclose(out["embedding"].numpy(), want, atol=1e-5)


def test_keras_hub_loads_the_folder(large_weights_export, trained_run, tmp_path):
    import keras_hub

    artifacts_dir, run_id = trained_run
    run_export = str(tmp_path / "run-st")
    export_model(ExportConfig(model=run_id, format="sentence-transformers", out=run_export,
                              artifacts_dir=artifacts_dir))
    for folder in (large_weights_export, run_export):  # mean pooling; CLS pooling
        ours = resolve_encoder(folder)
        tanh_twin = _approximate_gelu_twin(ours)
        tokens = ours.tokenize(tf.constant(ASCII))
        backbone = keras_hub.models.BertBackbone.from_preset(folder)
        sequence = backbone(tokens)["sequence_output"].numpy()
        np.testing.assert_allclose(sequence, tanh_twin(tokens)["sequence_output"].numpy(), atol=1e-5)

        embedder = keras_hub.models.BertTextEmbedder.from_preset(folder)
        assert (embedder.pooling_mode, embedder.normalize) == (ours.pooling, ours.normalize)
        assert embedder.preprocessor.sequence_length == ours.encoder_config.max_seq_len
        got = np.asarray(embedder.predict(ASCII, verbose=0))
        np.testing.assert_allclose(got, tanh_twin(tf.constant(ASCII))["embedding"].numpy(), atol=1e-5)
        if folder == large_weights_export:
            # The tanh GELU is a real difference, well outside the tolerance above.
            assert np.abs(got - ours(tf.constant(ASCII))["embedding"].numpy()).max() > 1e-4


def test_a_tflite_export_matches_the_savedmodel(tmp_path):
    from common.export.tflite import TFLITE_FILE, TFLiteEmbedder

    want = SentenceModel("random_tiny", max_seq_len=32).encode(SENTENCES)
    out = str(tmp_path / "tiny-tflite")
    record = export_model(ExportConfig(model="random_tiny", format="tflite", out=out, max_seq_len=32))
    assert record["quantize"] == "none" and set(record["files"]) == {TFLITE_FILE}
    reloaded = SentenceModel(out)  # --model=<folder> finds model.tflite
    assert reloaded.source.endswith(TFLITE_FILE)
    np.testing.assert_allclose(reloaded.encode(SENTENCES), want, atol=1e-5)
    for batch in (SENTENCES[:1], SENTENCES * 3):  # one interpreter, any batch size
        np.testing.assert_allclose(reloaded.encode(batch), SentenceModel("random_tiny", max_seq_len=32).encode(batch),
                                   atol=1e-5)

    quantized = str(tmp_path / "tiny-int8")
    export_model(ExportConfig(model="random_tiny", format="tflite", out=quantized, quantize="int8", max_seq_len=32))
    int8 = TFLiteEmbedder(os.path.join(quantized, TFLITE_FILE))(SENTENCES)
    assert int8.shape == want.shape and 1e-4 < np.abs(int8 - want).max() < 0.1
    assert os.path.getsize(os.path.join(quantized, TFLITE_FILE)) < 0.8 * os.path.getsize(os.path.join(out, TFLITE_FILE))


def test_a_format_is_one_module_and_one_row_of_the_table(tmp_path, monkeypatch):
    """A toy format (the embeddings of a few sentences, as JSON), registered as one module-like object
    and one row of the table: export_model writes it and resolve_model finds it and reads it back."""
    import types

    from common.models import formats

    def writer(encoder, settings):
        vectors = encoder(tf.constant(SENTENCES))["embedding"].numpy()  # converted before anything is written

        def write(folder):
            with open(os.path.join(folder, "toy.json"), "w") as f:
                json.dump(dict(zip(SENTENCES, vectors.tolist())), f)
        return write

    def read(location, max_seq_len, precision):
        table = json.load(open(location))
        return lambda sentences: np.array([table[s.decode("utf-8")] for s in sentences.numpy()], np.float32)

    toy = types.SimpleNamespace(
        DESCRIPTION="the embeddings of a few sentences", QUANTIZATIONS=("none",), CALIBRATED=(), BACKENDS=(),
        writer=writer, read=read,
        record=lambda settings: {"sentences": len(SENTENCES)},
        detect=lambda path: os.path.join(path, "toy.json") if os.path.isfile(os.path.join(path, "toy.json")) else None)
    monkeypatch.setitem(formats.FORMATS, "toy", toy)

    out = str(tmp_path / "toy")
    record = export_model(ExportConfig(model="random_tiny", format="toy", out=out, max_seq_len=32))
    assert record["format"] == "toy" and record["sentences"] == len(SENTENCES) and set(record["files"]) == {"toy.json"}
    assert json.load(open(os.path.join(out, "export.json")))["sentences"] == len(SENTENCES)
    embedder = resolve_model(out)
    assert embedder.source == os.path.join(out, "toy.json")
    np.testing.assert_allclose(embedder.embed(SENTENCES, progress=False),
                               SentenceModel("random_tiny", max_seq_len=32).encode(SENTENCES), atol=1e-6)
    with pytest.raises(ValueError, match="is an exported model: a traced graph"):  # no encoder to export again
        resolve_encoder(out)
    with pytest.raises(ValueError, match="--quantize=int8 applies to --format=tflite/onnx/openvino only; a toy export"):
        export_model(ExportConfig(model="random_tiny", format="toy", out=str(tmp_path / "x"), quantize="int8"))
    monkeypatch.delitem(formats.FORMATS, "toy")
    with pytest.raises(ValueError, match="not a model directory"):  # the row, not anything else, made it readable
        resolve_model(out)


@pytest.fixture(scope="module")
def tfhub_export(tmp_path_factory):
    """A tiny random BERT (weights of scale 0.2) in a sentence-transformers folder that pools CLS and
    normalises, and its tfhub-bert export."""
    from fixtures import write_hf_bert_dir

    root = tmp_path_factory.mktemp("tfhub")
    hf = write_hf_bert_dir(str(root / "hf"), os.path.join(minilm_dir(), "vocab.txt"), seed=5)
    source = str(root / "st")
    os.makedirs(source)
    write_sentence_transformers(build_encoder(EncoderConfig(spec=hf, pooling="cls", normalize=True, max_seq_len=32)),
                                source)
    out = str(root / "tfhub")
    record = export_model(ExportConfig(model=source, format="tfhub-bert", out=out, max_seq_len=32))
    return source, out, record


# Runs under tf-keras (Keras 2), as the original PAUSE code uses TF Hub's BERTs: calls the export through
# hub.KerasLayer, reads its vocab_file and do_lower_case, and takes one SGD step on a loss of its outputs.
HUB_KERAS_LAYER = """
import json, sys
import numpy as np
import tensorflow as tf
import tensorflow_hub as hub
import tf_keras

path, inputs_file, result = sys.argv[1:]
inputs = {k: tf.constant(v, tf.int32) for k, v in np.load(inputs_file).items()}
layer = hub.KerasLayer(path, trainable=True)
outputs = layer(inputs, training=False)
before = [v.numpy().copy() for v in layer.trainable_variables]
with tf.GradientTape() as tape:
    trained = layer(inputs, training=True)
    loss = tf.reduce_sum(trained["sequence_output"] ** 2) + tf.reduce_sum(trained["pooled_output"])
grads = tape.gradient(loss, layer.trainable_variables)
tf_keras.optimizers.SGD(0.1).apply_gradients(zip(grads, layer.trainable_variables))
np.savez(result + ".npz", **{k: v.numpy() for k, v in outputs.items()})
info = {"keras": tf.keras.Model.__module__, "tf_keras_layer": isinstance(layer, tf_keras.layers.Layer),
        "vocab_file": layer.resolved_object.vocab_file.asset_path.numpy().decode(),
        "do_lower_case": bool(layer.resolved_object.do_lower_case.numpy()),
        "trainable": len(layer.trainable_variables), "no_gradient": sum(g is None for g in grads),
        "changed": sum(bool(np.any(b != v.numpy())) for b, v in zip(before, layer.trainable_variables))}
json.dump(info, open(result + ".json", "w"))
"""


def test_a_tfhub_bert_export_runs_and_fine_tunes_through_hub_keras_layer_under_tf_keras(tfhub_export, tmp_path):
    source, out, record = tfhub_export
    assert record["format"] == "tfhub-bert" and "saved_model.pb" in record["files"]
    encoder = build_encoder(EncoderConfig(spec=source, max_seq_len=32))
    tokens = encoder.tokenizer(tf.constant(SENTENCES))
    inputs = {"input_word_ids": tokens["token_ids"].numpy(), "input_mask": tokens["padding_mask"].numpy(),
              "input_type_ids": tokens["segment_ids"].numpy()}
    assert inputs["input_mask"].min() == 0  # padded: the mask matters
    np.savez(tmp_path / "inputs.npz", **{k: v.astype(np.int32) for k, v in inputs.items()})
    result = str(tmp_path / "result")
    env = {**os.environ, "TF_USE_LEGACY_KERAS": "1", "PYTHONPATH": ""}
    proc = subprocess.run([sys.executable, "-c", HUB_KERAS_LAYER, out, str(tmp_path / "inputs.npz"), result],
                          cwd=str(tmp_path), env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    info, got = json.load(open(result + ".json")), np.load(result + ".npz")
    assert info["keras"].startswith("tf_keras") and info["tf_keras_layer"]

    want = encoder.backbone(tokens, training=False)
    np.testing.assert_allclose(got["sequence_output"], want["sequence_output"].numpy(), atol=1e-5)
    np.testing.assert_allclose(got["pooled_output"], want["pooled_output"].numpy(), atol=1e-5)
    np.testing.assert_array_equal(got["default"], got["pooled_output"])

    assert os.path.isfile(info["vocab_file"]) and info["vocab_file"].startswith(out)
    assert open(info["vocab_file"], encoding="utf-8").read() == open(os.path.join(source, "vocab.txt"),
                                                                      encoding="utf-8").read()
    assert info["do_lower_case"] is encoder.tokenizer.config.lowercase is True

    weights = len(encoder.backbone.trainable_weights)
    assert info["trainable"] == weights > 20 and info["no_gradient"] == 0 and info["changed"] == weights


def test_the_toolkit_reads_a_tfhub_bert_export_back_as_the_model_it_came_from(tfhub_export, tmp_path):
    source, out, _ = tfhub_export
    want = SentenceModel(source).encode(SENTENCES)
    np.testing.assert_allclose(np.linalg.norm(want, axis=1), 1, atol=1e-6)  # the source normalises
    embedder = resolve_model(out)  # --model=<export>: found by the format's detector
    assert embedder.source == out
    np.testing.assert_allclose(embedder.embed(SENTENCES, progress=False), want, atol=1e-5)
    from common.models.formats import FORMATS

    read = FORMATS["tfhub-bert"].read(out, 32, "fp32")
    assert type(read.backbone).__name__ == "HubBertBackbone"
    assert (read.encoder_config.pooling, read.encoder_config.normalize) == ("cls", True)  # export.json's
    # Without the record (a TF Hub BERT of TF Hub's own), a TF-Hub-format BERT pools by default.
    assert build_encoder(EncoderConfig(spec=out, max_seq_len=32)).encoder_config.pooling == "mean"
    with pytest.raises(ValueError, match="--format=tfhub-bert writes a BERT built by this toolkit"):
        export_model(ExportConfig(model=out, format="tfhub-bert", out=str(tmp_path / "again")))
    assert not (tmp_path / "again").exists()


@pytest.fixture(scope="module")
def savedmodel_export(tmp_path_factory):
    """The tiny random BERT's embedding SavedModel, written by export.py's library call."""
    out = str(tmp_path_factory.mktemp("savedmodel") / "tiny-savedmodel")
    record = export_model(ExportConfig(model="random_tiny", format="savedmodel", out=out, max_seq_len=32))
    return out, record


def test_a_savedmodel_export_is_found_and_read_back_equal_to_its_source(savedmodel_export):
    from common.models import formats

    out, record = savedmodel_export
    assert record["format"] == "savedmodel" and record["encoder"]["max_seq_len"] == 32
    assert {"saved_model.pb", "variables/variables.index"} <= set(record["files"])
    assert os.path.isfile(os.path.join(out, "export.json"))
    assert formats.find(out) == (formats.FORMATS["savedmodel"], out)
    want = SentenceModel("random_tiny", max_seq_len=32).encode(SENTENCES)  # the long sentence is truncated
    reloaded = SentenceModel(out)  # --model=<folder>
    assert reloaded.source == out
    np.testing.assert_allclose(reloaded.encode(SENTENCES), want, atol=1e-6)
    loaded = tf.saved_model.load(out)  # what TensorFlow reads (and a run's embedding/ is)
    served = loaded.signatures["serving_default"](sentences=tf.constant(SENTENCES))["embeddings"]
    np.testing.assert_allclose(served.numpy(), want, atol=1e-6)
    assert int(loaded.max_seq_len.numpy()) == 32


def test_a_runs_savedmodel_export_equals_the_embedding_model_it_published(trained_run, tmp_path):
    artifacts_dir, run_id = trained_run
    out = str(tmp_path / "run-savedmodel")
    export_model(ExportConfig(model=run_id, format="savedmodel", out=out, artifacts_dir=artifacts_dir))
    published = resolve_model(run_id, artifacts_dir=artifacts_dir)
    assert published.source.endswith("embedding")
    np.testing.assert_allclose(SentenceModel(out).encode(SENTENCES), published.embed(SENTENCES, progress=False),
                               atol=1e-6)


def test_detection_tells_an_embedding_savedmodel_from_a_tfhub_bert(savedmodel_export, tfhub_export, tmp_path,
                                                                   monkeypatch):
    """tfhub-bert's detector looks for saved_model.pb and assets/vocab.txt only, savedmodel's reads the
    signature: with a vocab.txt asset beside it, an embedding SavedModel is still one, because its row
    comes first (reversed, the test shows the difference)."""
    import shutil

    from common.models import formats

    copy = str(tmp_path / "with-vocab")
    shutil.copytree(savedmodel_export[0], copy)
    with open(os.path.join(copy, "assets", "vocab.txt"), "w") as f:
        f.write("[PAD]\n")
    _, tfhub, _ = tfhub_export
    assert formats.find(copy)[0] is formats.FORMATS["savedmodel"]
    assert formats.find(tfhub)[0] is formats.FORMATS["tfhub-bert"]
    assert formats.FORMATS["savedmodel"].detect(tfhub) is None
    reversed_rows = dict(reversed(list(formats.FORMATS.items())))
    monkeypatch.setattr(formats, "FORMATS", reversed_rows)
    assert formats.find(copy)[0] is reversed_rows["tfhub-bert"]


def test_a_savedmodel_export_refuses_what_a_traced_graph_cannot_do(savedmodel_export, tmp_path):
    from common.errors import UserError

    out, _ = savedmodel_export
    with pytest.raises(UserError, match="is an exported model: a traced graph.*export.json records it as"):
        export_model(ExportConfig(model=out, format="savedmodel", out=str(tmp_path / "again")))
    assert not (tmp_path / "again").exists()
    with pytest.raises(UserError, match=f"--precision=bf16: {out} is an exported model"):
        SentenceModel(out, precision="bf16")
    with pytest.raises(UserError, match=f"--max_seq_len=16: {out} is an exported model, which truncates at 32"):
        SentenceModel(out, max_seq_len=16)
    # Keras 3 fine-tunes the model it came from (docs/usage/keras.md), not the graph.
    with pytest.raises(UserError, match="an embedding SavedModel .* is a traced graph, not an encoder to rebuild"):
        SentenceEncoder.from_preset(out)


def test_test_sts_scores_a_savedmodel_export_as_its_source(savedmodel_export, tmp_path):
    from fixtures import PAIRS

    out, _ = savedmodel_export
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("".join(json.dumps({"sentence1": a, "sentence2": b, "score": float(s)}) + "\n"
                             for a, b, s in PAIRS))
    scores = tmp_path / "scores.json"
    proc = run_script("test_sts.py", [f"--model={out}", f"--pairs={pairs}", "--baseline=random_tiny",
                                      "--max_seq_len=32", f"--output={scores}"], cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.load(open(scores))
    assert result["pairs"] == len(PAIRS) and result["baseline"]["model"] == "random_tiny"
    assert abs(result["spearman"] - result["baseline"]["spearman"]) < 1e-6
    assert abs(result["pearson"] - result["baseline"]["pearson"]) < 1e-6


@pytest.mark.filterwarnings("ignore:Gradients do not exist for variables")  # the pooler's, as said below
def test_keras_tfsmlayer_trains_a_savedmodel_export_only_with_slotless_optimizers(savedmodel_export):
    """What docs/usage/export.md says of Keras 3's TFSMLayer over the export: it names its weights
    after TensorFlow's variables (`...:0`), and an optimizer's slot variables, named after them, are
    refused, so Adam fails at its first step where plain SGD trains. Should Keras fix it, this fails
    and the page changes."""
    import keras

    out, _ = savedmodel_export
    labels = np.arange(len(SENTENCES)) % 2

    def classifier(optimizer):
        layer = keras.layers.TFSMLayer(out, call_endpoint="serving_default", trainable=True)
        inputs = keras.Input(shape=(), dtype="string")
        model = keras.Model(inputs, keras.layers.Dense(2)(layer(inputs)["embeddings"]))
        model.compile(optimizer=optimizer, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        return model, layer

    model, _ = classifier(keras.optimizers.Adam(1e-3))
    with pytest.raises(ValueError, match=r":0_momentum' is not a valid scope name"):
        model.fit(tf.constant(SENTENCES), labels, batch_size=len(SENTENCES), verbose=0)
    model, layer = classifier(keras.optimizers.SGD(0.5))
    before = [w.numpy().copy() for w in layer.trainable_weights]
    model.fit(tf.constant(SENTENCES), labels, batch_size=len(SENTENCES), verbose=0)
    changed = [bool(np.any(b != w.numpy())) for b, w in zip(before, layer.trainable_weights)]
    # Every weight (5 of the embeddings, 16 a layer, the pooler's 2) but BERT's pooler, which mean pooling
    # leaves without a gradient.
    assert len(changed) == 5 + 16 * TINY_BERT["num_layers"] + 2 and sum(changed) == len(changed) - 2


def _check_st(*args, cwd):
    return subprocess.run([sys.executable, os.path.join(ROOT, "check_sentence_transformers.py"), *args], cwd=cwd,
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": ROOT})


def test_check_sentence_transformers_step_one_writes_this_toolkits_embeddings(tiny_export, tmp_path):
    """check_sentence_transformers.py, the user tool that checks an export in sentence-transformers: its
    first step, here (the second needs PyTorch and sentence-transformers, which the suite does not install)."""
    from check_sentence_transformers import SENTENCES

    reference = tmp_path / "ref.npz"
    proc = _check_st(f"--folder={tiny_export}", f"--write_reference={reference}", cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-2000:]
    saved = np.load(reference, allow_pickle=True)
    assert [str(s) for s in saved["sentences"]] == SENTENCES
    np.testing.assert_allclose(saved["embeddings"], SentenceModel(tiny_export).encode(SENTENCES), atol=1e-6)
    (tmp_path / "mine.txt").write_text("one sentence\nand another\n")
    args = [f"--folder={tiny_export}", f"--write_reference={reference}", f"--sentences_file={tmp_path / 'mine.txt'}"]
    proc = run_script("check_sentence_transformers.py", args, cwd=str(tmp_path))  # in this process: tests/in_process.py
    assert proc.returncode == 0 and np.load(reference, allow_pickle=True)["embeddings"].shape[0] == 2


def test_check_sentence_transformers_refuses_bad_input_in_one_line(tmp_path):
    # In this process (tests/in_process.py); the step above runs the script's own process.
    proc = run_script("check_sentence_transformers.py", [f"--folder={tmp_path}"], cwd=str(tmp_path))
    assert proc.returncode == 2 and "give exactly one of --write_reference" in proc.stderr
    args = [f"--folder={tmp_path / 'missing'}", f"--write_reference={tmp_path / 'ref.npz'}"]
    proc = run_script("check_sentence_transformers.py", args, cwd=str(tmp_path))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert proc.stderr.strip().splitlines()[-1].startswith("check_sentence_transformers.py: "), proc.stderr[-1500:]
    assert not (tmp_path / "ref.npz").exists()


def test_export_py_writes_a_folder_and_refuses_bad_input_in_one_line(tmp_path):
    out = tmp_path / "st"
    proc = run_script("export.py", ["--model=random_tiny", "--format=sentence-transformers", f"--out={out}",
                                    "--max_seq_len=32"], cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert f"next: python test_sts.py --model={out}" in proc.stdout and "| model.safetensors |" in proc.stdout
    for args, message in [(("--model=random_tiny", "--format=sentence-transformers", f"--out={out}"),
                           f"--out={out} exists"),
                          (("--model=random_tiny", f"--out={tmp_path / 'x'}"), "--format is required")]:
        proc = run_script("export.py", list(args), cwd=str(tmp_path))
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, (args, proc.stderr[-1500:])
        assert proc.stderr.strip().splitlines()[-1].startswith(f"export.py: {message}"), proc.stderr[-1500:]
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("settings,message", [
    (dict(model="random_tiny", format="sentence-transformers", quantize="int8"),
     "--quantize=int8 applies to --format=tflite/onnx/openvino only"),
    (dict(model="random_tiny", format="torchscript"), "--format must be one of sentence-transformers, tflite"),
    (dict(model="no-such-model", format="tflite"), "Unknown --model 'no-such-model'"),
    (dict(model="{tmp}", format="tflite"), "no encoder to export"),
    (dict(model="random_tiny", format="tflite", max_seq_len=1), "--max_seq_len must be >= 2"),
])
def test_export_settings_that_cannot_work_are_refused_before_anything_is_written(tmp_path, settings, message):
    settings = {**settings, "model": settings["model"].replace("{tmp}", str(tmp_path))}
    with pytest.raises(ValueError, match=message):
        export_model(ExportConfig(out=str(tmp_path / "x"), **settings))
    assert not (tmp_path / "x").exists()


def test_hub_backbones_are_refused_with_a_reason(tmp_path):
    from common.export.sentence_transformers_folder import write_sentence_transformers

    class HubLike:
        handle = "https://tfhub.dev/example/bert/1"

    encoder = resolve_encoder("random_tiny", max_seq_len=32)
    fake = type("HubEncoder", (), {"backbone": HubLike(), "tokenizer": encoder.tokenizer,
                                   "encoder_config": encoder.encoder_config})()
    assert not isinstance(fake.backbone, BertBackbone)
    with pytest.raises(ValueError, match="wraps a TF Hub SavedModel.*no Hugging Face names"):
        write_sentence_transformers(fake, str(tmp_path))


@pytest.mark.large
def test_minilm_tflite_is_within_1e_4_of_the_encoder_on_sts_sentences(minilm_encoder, data_path, tmp_path):
    """MiniLM's TFLite model against the Keras encoder on STS sentences whose tokens agree; those that
    tensorflow-text's NFKC lower-casing tokenizes otherwise are the documented exception."""
    import random

    from common.data.sts import load_all
    from common.loading.embedding import embed_sentences
    from common.export.tflite import TFLiteEmbedder, tflite_model

    sets = load_all(data_path)
    pool = sorted({s for group in sets.values() for pairs in group.values()
                   for s in pairs.sentences1 + pairs.sentences2})
    nfkc = [s for s in pool if "´" in s or "…" in s][:4]
    sentences = random.Random(0).sample(pool, 192) + nfkc
    tflite = TFLiteEmbedder(tflite_model(minilm_encoder), num_threads=1)
    want = embed_sentences(tf.function(minilm_encoder.embed_strings), sentences, 32, progress=False)
    got = np.concatenate([tflite(sentences[i:i + 32]) for i in range(0, len(sentences), 32)])
    tokenizer = minilm_encoder.tokenizer
    import tensorflow_text as tf_text

    fast = tf_text.FastBertTokenizer(vocab=tokenizer.vocabulary, token_out_type=tf.int32, unknown_token="[UNK]",
                                     lower_case_nfd_strip_accents=True)
    agree = np.array([a == b for a, b in zip(tokenizer.wordpiece_ids(tf.constant(sentences)).to_list(),
                                             fast.tokenize(tf.constant(sentences)).to_list())])
    assert len(nfkc) == 4 and not agree[-4:].any()  # the exception is real on this data
    assert agree[:-4].mean() > 0.99
    np.testing.assert_allclose(got[agree], want[agree], atol=1e-4)
