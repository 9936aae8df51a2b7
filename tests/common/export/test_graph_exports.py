"""export.py --format=onnx|openvino, and sentence-transformers folders that carry both: the graphs equal the
encoder they came from, every --model reader loads them through the format table, and what they refuse.

A random BERT with weights of scale 0.2 (tests/fixtures.py) is used, whose activations reach where the erf
and tanh GELUs differ, so a graph with the wrong GELU fails.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from common import SentenceModel
from common.errors import UserError
from common.export import ExportConfig, export_model
from common.loading.resolve import resolve_model
from common.models.encoder import EncoderConfig, build_encoder
from common.models.formats import onnx as onnx_format
from common.models.formats import openvino as openvino_format
from common.models.sources.names import minilm_dir
from in_process import run_script

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SENTENCES = ["A man is playing a guitar.", "", "Stocks fell sharply on Monday, didn't they?",
             "The quick brown fox jumps over the lazy dog " * 4, "Crème brûlée, isn't it?", "x"]


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    from fixtures import write_hf_bert_dir

    return write_hf_bert_dir(str(tmp_path_factory.mktemp("hf") / "bert"), os.path.join(minilm_dir(), "vocab.txt"))


@pytest.fixture(scope="module")
def exports(source, tmp_path_factory):
    """The random BERT (mean pooling, normalised) exported as ONNX and OpenVINO, float32 and int8."""
    root = tmp_path_factory.mktemp("graphs")
    calibration = root / "calibration.txt"
    calibration.write_text("".join(s + "\n" for s in SENTENCES[:4] * 3))
    out = {}
    for name in ("onnx", "openvino"):
        for quantize in ("none", "int8"):
            path = str(root / f"{name}-{quantize}")
            export_model(ExportConfig(model=source, format=name, out=path, quantize=quantize,
                                      calibration_data=str(calibration) if name == "openvino" and quantize == "int8"
                                      else None))
            out[name, quantize] = path
    return out


def _encoder(source, **settings):
    return build_encoder(EncoderConfig(spec=source, **settings))


@pytest.mark.parametrize("pooling,normalize,activation", [("mean", True, "gelu"), ("mean", False, "gelu_approximate"),
                                                          ("cls", True, "gelu"), ("pooler", False, "gelu")])
def test_the_graph_computes_the_encoder_to_1e_5(source, tmp_path, pooling, normalize, activation):
    """Both outputs against the Keras encoder, on ONNX Runtime and on OpenVINO: `sentence_embedding` (pooling,
    normalisation) and `last_hidden_state` at every real token."""
    import onnxruntime as ort
    import openvino as ov

    from fixtures import write_hf_bert_dir

    folder = source if activation == "gelu" else write_hf_bert_dir(
        str(tmp_path / "hf"), os.path.join(minilm_dir(), "vocab.txt"), hidden_act="gelu_new")
    encoder = _encoder(folder, pooling=pooling, normalize=normalize, max_seq_len=48)
    assert encoder.backbone.config.activation == activation
    want = encoder(tf.constant(SENTENCES))
    inputs = onnx_format.token_arrays(encoder.tokenizer, SENTENCES)
    content = onnx_format.model_bytes(encoder)
    session = ort.InferenceSession(content, providers=["CPUExecutionProvider"])
    assert [i.name for i in session.get_inputs()] == ["input_ids", "attention_mask", "token_type_ids"]
    assert [o.name for o in session.get_outputs()] == ["last_hidden_state", "sentence_embedding"]
    compiled = ov.Core().compile_model(openvino_format.converted(encoder), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    runs = {"onnxruntime": dict(zip(["last_hidden_state", "sentence_embedding"], session.run(None, inputs))),
            "openvino": {name: compiled(inputs)[compiled.output(name)]
                         for name in ("last_hidden_state", "sentence_embedding")}}
    real = inputs["attention_mask"].astype(bool)
    for runtime, got in runs.items():
        np.testing.assert_allclose(got["sentence_embedding"], want["embedding"].numpy(), atol=1e-5, err_msg=runtime)
        np.testing.assert_allclose(got["last_hidden_state"][real], want["sequence_output"].numpy()[real], atol=1e-5,
                                   err_msg=runtime)
    if normalize:
        np.testing.assert_allclose(np.linalg.norm(runs["onnxruntime"]["sentence_embedding"], axis=1), 1, atol=1e-6)


def test_float_exports_load_back_through_the_table_to_1e_5(source, exports):
    want = SentenceModel(source).encode(SENTENCES)
    for name in ("onnx", "openvino"):
        path = exports[name, "none"]
        model = SentenceModel(path)
        assert model.source == path
        np.testing.assert_allclose(model.encode(SENTENCES, batch_size=4), want, atol=1e-5, err_msg=name)
        record = json.load(open(os.path.join(path, "export.json")))
        assert record["format"] == name and record["quantize"] == "none"
    np.testing.assert_allclose(SentenceModel(os.path.join(exports["onnx", "none"], "model.onnx")).encode(SENTENCES),
                               want, atol=1e-5)  # the .onnx file itself, its tokenizer beside it
    xml = os.path.join(exports["openvino", "none"], "openvino_model.xml")
    assert resolve_model(xml).source == exports["openvino", "none"]
    assert set(json.load(open(os.path.join(exports["openvino", "none"], "export.json")))["files"]) == {
        "openvino_model.xml", "openvino_model.bin", "vocab.txt", "tokenizer.json", "tokenizer_config.json",
        "special_tokens_map.json"}


def test_int8_exports_are_quantized_and_close(source, exports):
    """int8 graphs hold int8 weights (ONNX Runtime's dynamic MatMulInteger, NNCF's FakeQuantize/FakeConvert nodes),
    stay close to the float model, and record how they were calibrated."""
    import onnx
    import openvino as ov

    want = SentenceModel(source).encode(SENTENCES)
    ops = {node.op_type for node in onnx.load(os.path.join(exports["onnx", "int8"], "model.onnx")).graph.node}
    assert "MatMulInteger" in ops and "DynamicQuantizeLinear" in ops
    ov_ops = {op.get_type_name() for op in ov.Core().read_model(
        os.path.join(exports["openvino", "int8"], "openvino_model.xml")).get_ops()}
    assert ov_ops & {"FakeQuantize", "FakeConvert"}, sorted(ov_ops)
    for name in ("onnx", "openvino"):
        got = SentenceModel(exports[name, "int8"]).encode(SENTENCES)
        cosine = np.sum(got * want, axis=1)  # both normalised
        assert cosine.min() > 0.9, (name, cosine)
        assert np.abs(got - want).max() > 1e-6, name  # quantized: not the float graph
    record = json.load(open(os.path.join(exports["openvino", "int8"], "export.json")))
    assert record["quantize"] == "int8" and record["calibration"].endswith("calibration.txt")


def test_readers_refuse_what_an_exported_graph_cannot_do(exports):
    path = exports["onnx", "none"]
    with pytest.raises(UserError, match="--precision=bf16: .* is an exported model"):
        resolve_model(path, precision="bf16")
    with pytest.raises(UserError, match="--max_seq_len=16: .* truncates at 64 tokens"):
        resolve_model(exports["openvino", "none"], max_seq_len=16)
    assert resolve_model(path, max_seq_len=64).source == path


@pytest.mark.parametrize("settings,message", [
    ({"format": "onnx", "quantize": "int8", "calibration_data": "c.txt"},
     "--calibration_data applies to --format=openvino --quantize=int8 only"),
    ({"format": "openvino", "calibration_data": "c.txt"}, "--calibration_data applies to"),
    ({"format": "tflite", "st_backends": ("onnx",)}, "--format=tflite carries no other runtime"),
    ({"format": "sentence-transformers", "st_backends": ("tflite",)},
     "--format=sentence-transformers carries onnx, openvino"),
])
def test_settings_that_cannot_work_are_refused_before_anything_is_written(tmp_path, settings, message):
    out = tmp_path / "out"
    with pytest.raises(UserError, match=message):
        export_model(ExportConfig(model="random_tiny", out=str(out), **settings))
    assert not out.exists()


def test_calibration_sentences_come_from_the_file_or_stsb_train(tmp_path):
    from fixtures import PAIRS, write_sts_root

    data = write_sts_root(str(tmp_path / "data"))
    sample = openvino_format.calibration_sentences(None, data)
    assert sorted(sample) == sorted({s for a, b, _ in PAIRS for s in (a, b)})  # fewer than 300: all of them
    assert sample == openvino_format.calibration_sentences(None, data)  # a fixed sample
    lines = tmp_path / "mine.txt"
    lines.write_text("one\n\n  two  \n")
    assert openvino_format.calibration_sentences(str(lines), data) == ["one", "two"]
    for path, message in ((tmp_path / "missing.txt", "no such file"), (tmp_path / "empty.txt", "no sentences")):
        if "empty" in str(path):
            path.write_text("\n")
        with pytest.raises(UserError, match=f"--calibration_data=.*: {message}"):
            openvino_format.calibration_sentences(str(path), data)
    with pytest.raises(UserError, match="give --calibration_data=FILE .* or --data_path holding STS-B train"):
        openvino_format.calibration_sentences(None, str(tmp_path / "nowhere"))


def test_a_missing_optional_package_is_one_line_and_exit_code_2(tmp_path):
    """export.py where `onnx` cannot be imported (a stand-in module that raises ImportError shadows it)."""
    blocker = tmp_path / "blocked"
    blocker.mkdir()
    (blocker / "onnx.py").write_text("raise ImportError('blocked for the test')\n")
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "export.py"), "--model=random_tiny", "--format=onnx",
                           f"--out={tmp_path / 'out'}"], cwd=str(tmp_path), capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": f"{blocker}{os.pathsep}{ROOT}"})
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    assert "needs the optional package 'onnx'" in proc.stderr and "pip install .[onnx]" in proc.stderr
    assert not (tmp_path / "out").exists()


def test_padded_mean_pooling_is_refused_in_one_line(source, tmp_path):
    with pytest.raises(UserError, match="padded_mean.*use --format=tflite or --format=savedmodel"):
        onnx_format.refuse_unsupported(_encoder(source, pooling="padded_mean", max_seq_len=16), "m", "onnx")


def test_test_sts_scores_an_onnx_export_as_its_source(source, exports, tmp_path):
    """test_sts.py --model=<export>, the scripts' common path (`resolve_model`), against the source's scores."""
    from fixtures import PAIRS

    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("".join(json.dumps({"sentence1": a, "sentence2": b, "score": float(s)}) + "\n"
                             for a, b, s in PAIRS))
    scores = tmp_path / "scores.json"
    proc = run_script("test_sts.py", [f"--model={exports['openvino', 'none']}", f"--pairs={pairs}",
                                      f"--baseline={source}", f"--output={scores}"], cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.load(open(scores))
    assert result["pairs"] == len(PAIRS) and abs(result["spearman"] - result["baseline"]["spearman"]) < 1e-6


@pytest.fixture(scope="module")
def st_folder_with_backends(source, tmp_path_factory):
    out = str(tmp_path_factory.mktemp("st") / "folder")
    export_model(ExportConfig(model=source, format="sentence-transformers", out=out, st_backends=("onnx", "openvino")))
    return out


def test_a_sentence_transformers_folder_carries_its_backends_as_sentence_transformers_reads_them(
        st_folder_with_backends):
    """The subfolders sentence-transformers' `backend="onnx"|"openvino"` loads (`onnx/model.onnx`,
    `openvino/openvino_model.xml`), run as it runs them: Hugging Face's tokenizer from the folder's
    tokenizer.json, the graph's first output `last_hidden_state`, then the folder's Pooling module.
    Both equal the toolkit's embeddings of the folder; the folder still reads as itself."""
    import onnxruntime as ort
    import openvino as ov
    from tokenizers import Tokenizer

    folder = st_folder_with_backends
    want = SentenceModel(folder).encode(SENTENCES)
    assert resolve_model(folder).source == folder
    assert json.load(open(os.path.join(folder, "export.json")))["st_backends"] == ["onnx", "openvino"]
    modules = [m["type"].rsplit(".", 1)[1] for m in json.load(open(os.path.join(folder, "modules.json")))]
    assert modules == ["Transformer", "Pooling"]  # a Hugging Face BERT folder: mean pooling, not normalised
    pooling = json.load(open(os.path.join(folder, "1_Pooling", "config.json")))
    assert pooling["pooling_mode_mean_tokens"]

    tokenizer = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    tokenizer.enable_truncation(json.load(open(os.path.join(folder, "sentence_bert_config.json")))["max_seq_length"])
    tokenizer.enable_padding(pad_id=0)
    encoded = tokenizer.encode_batch(SENTENCES)
    inputs = {"input_ids": np.array([e.ids for e in encoded], np.int64),
              "attention_mask": np.array([e.attention_mask for e in encoded], np.int64),
              "token_type_ids": np.array([e.type_ids for e in encoded], np.int64)}

    def st_pooling(tokens):
        mask = inputs["attention_mask"][:, :, None].astype(np.float32)
        return (tokens * mask).sum(1) / np.maximum(mask.sum(1), 1e-9)

    session = ort.InferenceSession(os.path.join(folder, "onnx", "model.onnx"), providers=["CPUExecutionProvider"])
    assert session.get_outputs()[0].name == "last_hidden_state"
    np.testing.assert_allclose(st_pooling(session.run(None, inputs)[0]), want, atol=1e-5)
    core = ov.Core()
    compiled = core.compile_model(core.read_model(os.path.join(folder, "openvino", "openvino_model.xml")), "CPU",
                                  {"INFERENCE_PRECISION_HINT": "f32"})
    assert compiled.outputs[0].get_any_name() == "last_hidden_state"
    np.testing.assert_allclose(st_pooling(compiled(inputs)[compiled.output("last_hidden_state")]), want, atol=1e-5)
    assert os.path.exists(os.path.join(folder, "openvino", "openvino_model.bin"))


@pytest.mark.large
def test_minilm_float_graphs_equal_the_encoder_on_sts_sentences(minilm_encoder, data_path):
    """The real MiniLM's ONNX and OpenVINO graphs against the Keras encoder on STS-B test sentences."""
    import random

    import onnxruntime as ort

    from common.data.sts import load_stsb

    pairs = load_stsb(data_path, "test")
    sentences = random.Random(0).sample(sorted(set(pairs.sentences1 + pairs.sentences2)), 96)
    want = minilm_encoder(tf.constant(sentences))["embedding"].numpy()
    inputs = onnx_format.token_arrays(minilm_encoder.tokenizer, sentences)
    session = ort.InferenceSession(onnx_format.model_bytes(minilm_encoder), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(session.run(["sentence_embedding"], inputs)[0], want, atol=1e-5)
    import openvino as ov

    compiled = ov.Core().compile_model(openvino_format.converted(minilm_encoder), "CPU",
                                       {"INFERENCE_PRECISION_HINT": "f32"})
    np.testing.assert_allclose(compiled(inputs)[compiled.output("sentence_embedding")], want, atol=1e-5)


def test_the_extras_pin_what_the_suite_installs():
    """pyproject.toml's `onnx` and `openvino` extras name the versions requirements-dev.txt and constraints.txt pin."""
    import tomllib

    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        extras = tomllib.load(f)["project"]["optional-dependencies"]
    pins = set(open(os.path.join(ROOT, "requirements-dev.txt")).read().split())
    constrained = set(open(os.path.join(ROOT, "constraints.txt")).read().split())
    assert {onnx_format.EXTRA, openvino_format.EXTRA} <= set(extras)
    for name in (onnx_format.EXTRA, openvino_format.EXTRA):
        assert extras[name] and not set(extras[name]) - pins and not set(extras[name]) - constrained, extras[name]
