"""sentence-transformers folders of every version (common/models/st_folder.py): pooling keys old and
new, Dense and Normalize modules, prompts and include_prompt, ST 6's tokenizer-only layout, and one
clear line for what cannot be read. Each folder is a tiny random BERT written by the test; the
expected embeddings are NumPy over the token outputs of the same BERT loaded as a plain folder."""

import json
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

from common import SentenceModel
from common.errors import UserError
from common.models.encoder import EncoderConfig, build_encoder
from common.models.sources.names import minilm_dir
from fixtures import rebuilt_from_config
from in_process import run_script

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
TEXTS = ["A man is playing a guitar.", "", "Stocks fell sharply on Monday, didn't they?",
         "the quick brown fox jumps over the lazy dog " * 3]
HIDDEN = 32  # tests/fixtures.py's tiny BERT
TANH, IDENTITY = "torch.nn.modules.activation.Tanh", "torch.nn.modules.linear.Identity"
# Pooling configs as each sentence-transformers version writes them.
LEGACY_MEAN = {"word_embedding_dimension": HIDDEN, "pooling_mode_cls_token": False, "pooling_mode_mean_tokens": True,
               "pooling_mode_max_tokens": False, "pooling_mode_mean_sqrt_len_tokens": False}
LEGACY_CLS = {**LEGACY_MEAN, "pooling_mode_cls_token": True, "pooling_mode_mean_tokens": False,
              "pooling_mode_weightedmean_tokens": False, "pooling_mode_lasttoken": False, "include_prompt": True}
ST6_MEAN = {"embedding_dimension": HIDDEN, "pooling_mode": "mean", "include_prompt": True}


@pytest.fixture(scope="module")
def hf_dir(tmp_path_factory):
    from fixtures import write_hf_bert_dir

    return write_hf_bert_dir(str(tmp_path_factory.mktemp("hf") / "bert"), os.path.join(minilm_dir(), "vocab.txt"))


@pytest.fixture(scope="module")
def tokens_out(hf_dir):
    """The plain folder's token outputs of TEXTS: what every folder below pools."""
    out = build_encoder(EncoderConfig(spec=hf_dir))(tf.constant(TEXTS))
    return out["sequence_output"].numpy(), out["padding_mask"].numpy().astype(np.float32)


def _json(path, value):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(value, f)


def _dense(folder, in_features, out_features, bias, activation, seed, weights="safetensors"):
    """A Dense module folder with random weights; returns (W [out, in], b [out] or None)."""
    from safetensors.numpy import save_file

    rng = np.random.default_rng(seed)
    w = (rng.normal(size=(out_features, in_features)) * 0.3).astype(np.float32)
    b = (rng.normal(size=out_features) * 0.3).astype(np.float32) if bias else None
    _json(os.path.join(folder, "config.json"), {"in_features": in_features, "out_features": out_features,
                                                "bias": bias, "activation_function": activation})
    tensors = {"linear.weight": w, **({"linear.bias": b} if bias else {})}
    if weights == "safetensors":
        save_file(tensors, os.path.join(folder, "model.safetensors"))
    elif weights == "bin":
        open(os.path.join(folder, "pytorch_model.bin"), "wb").write(b"not read")
    return w, b


def st_folder(root, hf_dir, name, pooling=LEGACY_MEAN, dense=(), normalize=None, prompts=None):
    """`hf_dir` copied with sentence-transformers modules: `dense` as (in, out, bias, activation) tuples,
    `normalize` None (no module), "absent" (named, no folder), "empty" or "config" (ST 6's file).
    Returns (folder, [(W, b, activation) per Dense])."""
    folder = str(root / name)
    shutil.copytree(hf_dir, folder)
    kinds = ["Transformer", "Pooling"] + ["Dense"] * len(dense) + ["Normalize"] * (normalize is not None)
    modules = [{"idx": i, "name": str(i), "path": "" if i == 0 else f"{i}_{kind}",
                "type": f"sentence_transformers.models.{kind}"} for i, kind in enumerate(kinds)]
    _json(os.path.join(folder, "modules.json"), modules)
    _json(os.path.join(folder, "1_Pooling", "config.json"), pooling)
    layers = []
    for i, (n_in, n_out, bias, activation) in enumerate(dense, start=2):
        w, b = _dense(os.path.join(folder, f"{i}_Dense"), n_in, n_out, bias, activation, seed=i)
        layers.append((w, b, activation))
    if normalize in ("empty", "config"):
        os.makedirs(os.path.join(folder, modules[-1]["path"]))
    if normalize == "config":
        _json(os.path.join(folder, modules[-1]["path"], "config.json"),
              {"module_input_name": "sentence_embedding", "module_output_name": "sentence_embedding"})
    if prompts is not None:
        _json(os.path.join(folder, "config_sentence_transformers.json"), prompts)
    return folder, layers


def _mean(seq, mask):
    return (seq * mask[..., None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1e-9)


def _unit(x):
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


def _apply(pooled, layers, normalize):
    """What sentence-transformers applies after pooling: each Dense, then Normalize."""
    for w, b, activation in layers:
        pooled = pooled @ w.T + (0 if b is None else b)
        pooled = np.tanh(pooled) if activation == TANH else pooled
    return _unit(pooled) if normalize else pooled


@pytest.mark.parametrize("pooling,mode", [
    (LEGACY_MEAN, "mean"),  # sentence-transformers 2 (MiniLM's own file)
    (LEGACY_CLS, "cls"),  # 3-5, with include_prompt
    (ST6_MEAN, "mean"),  # 6: one key
    ({**ST6_MEAN, "pooling_mode": "cls"}, "cls"),
    ({**ST6_MEAN, "pooling_mode": ["cls"]}, "cls"),  # a list of one mode
    ({**LEGACY_MEAN, "pooling_mode_mean_tokens": False}, "mean"),  # no true boolean: sentence-transformers' default
    ({"embedding_dimension": HIDDEN}, "mean"),  # no key at all: the same
    ({**LEGACY_CLS, "pooling_mode": "mean"}, "mean"),  # the new key wins over the booleans
])
def test_every_versions_pooling_config_reads_as_sentence_transformers_reads_it(hf_dir, tokens_out, tmp_path,
                                                                               pooling, mode):
    folder, _ = st_folder(tmp_path, hf_dir, "st", pooling=pooling)
    encoder = build_encoder(EncoderConfig(spec=folder))
    assert (encoder.encoder_config.pooling, encoder.normalize) == (mode, False)
    seq, mask = tokens_out
    want = _mean(seq, mask) if mode == "mean" else seq[:, 0]
    np.testing.assert_allclose(encoder(tf.constant(TEXTS))["embedding"].numpy(), want, atol=1e-5)


@pytest.mark.parametrize("pooling,named", [
    ({**ST6_MEAN, "pooling_mode": "max"}, "pooling mode 'max' is not supported"),
    ({**ST6_MEAN, "pooling_mode": "lasttoken"}, "pooling mode 'lasttoken' is not supported"),
    ({**ST6_MEAN, "pooling_mode": "mean_sqrt_len_tokens"}, "pooling mode 'mean_sqrt_len_tokens' is not supported"),
    ({**ST6_MEAN, "pooling_mode": "weightedmean"}, "pooling mode 'weightedmean' is not supported"),
    ({**LEGACY_MEAN, "pooling_mode_mean_tokens": False, "pooling_mode_max_tokens": True},
     "pooling mode 'max' is not supported"),
    ({**ST6_MEAN, "pooling_mode": ["cls", "mean"]}, r"pooling modes \['cls', 'mean'\] \(concatenated\)"),
    ({**LEGACY_MEAN, "pooling_mode_cls_token": True}, r"pooling modes \['cls', 'mean'\] \(concatenated\)"),
])
def test_a_pooling_mode_not_implemented_is_one_line_naming_it_and_the_file(hf_dir, tmp_path, pooling, named):
    folder, _ = st_folder(tmp_path, hf_dir, "st", pooling=pooling)
    with pytest.raises(UserError, match=named) as error:
        build_encoder(EncoderConfig(spec=folder))
    message = str(error.value)
    assert message.startswith(os.path.join(folder, "1_Pooling", "config.json") + ": ") and "\n" not in message
    assert "'mean', 'cls'" in message


@pytest.mark.parametrize("normalize", ["absent", "empty", "config"])
def test_normalize_in_every_layout(hf_dir, tokens_out, tmp_path, normalize):
    folder, _ = st_folder(tmp_path, hf_dir, "st", pooling=ST6_MEAN, normalize=normalize)
    encoder = build_encoder(EncoderConfig(spec=folder))
    assert encoder.normalize
    np.testing.assert_allclose(encoder(tf.constant(TEXTS))["embedding"].numpy(), _unit(_mean(*tokens_out)),
                               atol=1e-5)


@pytest.mark.parametrize("dense,pooling,normalize", [
    ([(HIDDEN, 16, False, IDENTITY)], ST6_MEAN, None),  # a projection without bias
    ([(HIDDEN, 24, True, TANH)], LEGACY_CLS, "config"),
    ([(HIDDEN, 48, True, IDENTITY), (48, 8, True, TANH)], ST6_MEAN, "empty"),  # two in a row
    ([(HIDDEN, HIDDEN, True, IDENTITY)], LEGACY_CLS, None),  # square after CLS, but not BERT's pooler (no tanh)
])
def test_dense_modules_apply_to_the_pooled_embedding(hf_dir, tokens_out, tmp_path, dense, pooling, normalize):
    folder, layers = st_folder(tmp_path, hf_dir, "st", pooling=pooling, dense=dense, normalize=normalize)
    encoder = build_encoder(EncoderConfig(spec=folder))
    mode = "cls" if pooling is LEGACY_CLS else "mean"
    assert encoder.encoder_config.pooling == mode and encoder.embedding_size == dense[-1][1]
    seq, mask = tokens_out
    want = _apply(_mean(seq, mask) if mode == "mean" else seq[:, 0], layers, normalize is not None)
    out = encoder(tf.constant(TEXTS))
    assert out["embedding"].shape == (len(TEXTS), dense[-1][1]) and out["sequence_output"].shape[-1] == HIDDEN
    np.testing.assert_allclose(out["embedding"].numpy(), want, atol=1e-5)
    # The same model rebuilt from its config (no files read), given the weights.
    clone = rebuilt_from_config(encoder)
    clone(tf.constant(TEXTS[:1]))
    clone.set_weights(encoder.get_weights())
    np.testing.assert_allclose(clone(tf.constant(TEXTS))["embedding"].numpy(), want, atol=1e-5)


def test_berts_pooler_as_a_dense_module_stays_pooling_pooler_and_more_dense_follow(hf_dir, tokens_out, tmp_path):
    from safetensors.numpy import load_file

    folder, layers = st_folder(tmp_path, hf_dir, "st", pooling=LEGACY_CLS,
                               dense=[(HIDDEN, HIDDEN, True, TANH), (HIDDEN, 12, False, IDENTITY)])
    encoder = build_encoder(EncoderConfig(spec=folder))
    assert encoder.encoder_config.pooling == "pooler" and len(encoder.dense_layers) == 1
    # BERT's pooler now holds the first module's weights, not the checkpoint's pooler.dense.
    pooler = load_file(os.path.join(folder, "2_Dense", "model.safetensors"))
    np.testing.assert_array_equal(encoder.backbone.pooled_dense.kernel.numpy(), pooler["linear.weight"].T)
    want = _apply(tokens_out[0][:, 0], layers, False)
    np.testing.assert_allclose(encoder(tf.constant(TEXTS))["embedding"].numpy(), want, atol=1e-5)


def test_a_folder_with_dense_modules_exports_and_loads_back(hf_dir, tmp_path):
    from common.export.sentence_transformers_folder import write_sentence_transformers

    prompts = {"prompts": {"query": "query: ", "document": ""}, "default_prompt_name": "query"}
    folder, _ = st_folder(tmp_path, hf_dir, "st", pooling={**ST6_MEAN, "include_prompt": False},
                          dense=[(HIDDEN, 16, False, IDENTITY), (16, 8, True, TANH)], normalize="config",
                          prompts=prompts)
    encoder = build_encoder(EncoderConfig(spec=folder))
    out = tmp_path / "exported"
    out.mkdir()
    write_sentence_transformers(encoder, str(out))
    modules = json.load(open(out / "modules.json"))
    assert [m["path"] for m in modules] == ["", "1_Pooling", "2_Dense", "3_Dense", "4_Normalize"]
    assert json.load(open(out / "3_Dense" / "config.json")) == {"in_features": 16, "out_features": 8, "bias": True,
                                                                "activation_function": TANH}
    assert not json.load(open(out / "1_Pooling" / "config.json"))["include_prompt"]
    saved = json.load(open(out / "config_sentence_transformers.json"))
    assert (saved["prompts"], saved["default_prompt_name"]) == (prompts["prompts"], "query")
    before, after = SentenceModel(folder), SentenceModel(str(out))
    for kwargs in ({}, {"prompt": ""}, {"prompt_name": "document"}, {"prompt": "search: "}):
        np.testing.assert_allclose(after.encode(TEXTS, **kwargs), before.encode(TEXTS, **kwargs), atol=1e-6)


def test_a_runs_weights_hold_its_dense_modules(hf_dir, tmp_path):
    """A run trained from a folder with Dense modules checkpoints them: rebuilt from its weights/, it gives
    the trained embeddings, not the folder's."""
    from common.export.saved_model import save_encoder_artifact

    folder, _ = st_folder(tmp_path, hf_dir, "st", pooling=ST6_MEAN, dense=[(HIDDEN, 16, True, TANH)],
                          prompts={"prompts": {"query": "query: "}, "default_prompt_name": "query"})
    trained = build_encoder(EncoderConfig(spec=folder))
    trained.dense_layers[0].kernel.assign(trained.dense_layers[0].kernel.numpy() * 2.0)  # as a run changes it
    run = str(tmp_path / "run")
    save_encoder_artifact(trained, run)
    tf.train.Checkpoint(model=tf.train.Checkpoint(encoder=trained)).save(os.path.join(run, "weights", "ckpt"))
    want = trained(tf.constant(TEXTS))["embedding"].numpy()
    rebuilt = build_encoder(EncoderConfig(spec=run))
    np.testing.assert_allclose(rebuilt(tf.constant(TEXTS))["embedding"].numpy(), want, atol=1e-6)
    assert not np.allclose(build_encoder(EncoderConfig(spec=folder))(tf.constant(TEXTS))["embedding"].numpy(), want,
                           atol=1e-3)
    # The run's published SavedModel has no prompts, and neither has its rebuilt encoder.
    assert (rebuilt.prompts, rebuilt.default_prompt_name) == ({}, None)
    np.testing.assert_allclose(SentenceModel(run).encode(TEXTS), want, atol=1e-5)


def test_folder_prompts_apply_as_in_sentence_transformers(hf_dir, tmp_path):
    plain = SentenceModel(hf_dir)
    config = {"prompts": {"query": "query: ", "document": "passage: ", "empty": ""}, "default_prompt_name": "query"}
    folder, _ = st_folder(tmp_path, hf_dir, "st", pooling=ST6_MEAN, prompts=config)
    model = SentenceModel(folder)
    assert model.prompts == config["prompts"] and model.default_prompt_name == "query"

    def prefixed(prompt):
        return plain.encode([prompt + t for t in TEXTS])

    np.testing.assert_allclose(model.encode(TEXTS), prefixed("query: "), atol=1e-6)  # the default prompt
    np.testing.assert_allclose(model.encode(TEXTS, prompt_name="document"), prefixed("passage: "), atol=1e-6)
    np.testing.assert_allclose(model.encode(TEXTS, prompt=""), plain.encode(TEXTS), atol=1e-6)  # none
    np.testing.assert_allclose(model.encode(TEXTS, prompt_name="empty"), plain.encode(TEXTS), atol=1e-6)
    np.testing.assert_allclose(model.encode(TEXTS, prompt="x: ", prompt_name="document"), prefixed("x: "), atol=1e-6)
    assert not np.allclose(prefixed("query: "), plain.encode(TEXTS), atol=1e-4)
    # The caller's prompts and default win over the folder's; test_sts.py's path applies the default too.
    mine = SentenceModel(folder, prompts={"query": "q: "}, default_prompt_name="document")
    np.testing.assert_allclose(mine.encode(TEXTS), prefixed("passage: "), atol=1e-6)
    np.testing.assert_allclose(mine.encode(TEXTS, prompt_name="query"), prefixed("q: "), atol=1e-6)
    from common.loading.resolve import resolve_model

    np.testing.assert_allclose(resolve_model(folder).embed(TEXTS, progress=False), prefixed("query: "), atol=1e-6)
    with pytest.raises(UserError, match=r"default_prompt_name='nope' is not one of the prompts \['document', "):
        SentenceModel(folder, default_prompt_name="nope")
    bad, _ = st_folder(tmp_path, hf_dir, "bad", prompts={"prompts": {"query": "q: "}, "default_prompt_name": "doc"})
    with pytest.raises(UserError, match=r"config_sentence_transformers.json: default_prompt_name 'doc' is not one "):
        SentenceModel(bad)


@pytest.mark.parametrize("mode", ["mean", "cls"])
def test_include_prompt_false_pools_without_the_prompts_tokens(hf_dir, tmp_path, mode):
    pooling = {**ST6_MEAN, "pooling_mode": mode, "include_prompt": False}
    folder, _ = st_folder(tmp_path, hf_dir, "st", pooling=pooling, normalize="config",
                          prompts={"prompts": {"query": "query: find"}, "default_prompt_name": None})
    model, encoder = SentenceModel(folder), build_encoder(EncoderConfig(spec=hf_dir))
    prompt = "query: find"
    length = encoder.prompt_token_count(prompt)
    assert length == 1 + 3  # [CLS] query : find, as sentence-transformers counts it (no [SEP])
    out = encoder(tf.constant([prompt + " " + t for t in TEXTS]))
    seq, mask = out["sequence_output"].numpy(), out["padding_mask"].numpy().astype(np.float32)
    kept = mask.copy()
    kept[:, :length] = 0
    want = _mean(seq, kept) if mode == "mean" else seq[:, length]  # CLS pooling: the first token after the prompt
    got = model.encode([" " + t for t in TEXTS], prompt_name="query")
    np.testing.assert_allclose(got, _unit(want), atol=1e-5)
    # Without a prompt, every token is pooled.
    plain = encoder(tf.constant(TEXTS))
    seq, mask = plain["sequence_output"].numpy(), plain["padding_mask"].numpy().astype(np.float32)
    np.testing.assert_allclose(model.encode(TEXTS), _unit(_mean(seq, mask) if mode == "mean" else seq[:, 0]),
                               atol=1e-5)


def test_a_folder_saved_by_sentence_transformers_6_loads(hf_dir, tokens_out, tmp_path):
    """sentence-transformers 6 with transformers 5 writes no vocab.txt (tokenizer.json only) and no
    max_seq_length: the tokenizer's model_max_length holds the length, capped at the positions."""
    from common.export.sentence_transformers_folder import tokenizer_json

    folder, _ = st_folder(tmp_path, hf_dir, "st6", pooling=ST6_MEAN, normalize="config",
                          prompts={"prompts": {"query": "", "document": ""}, "default_prompt_name": None})
    vocabulary = open(os.path.join(folder, "vocab.txt"), encoding="utf-8").read().splitlines()
    os.remove(os.path.join(folder, "vocab.txt"))
    _json(os.path.join(folder, "tokenizer.json"), tokenizer_json(vocabulary, lowercase=True))
    _json(os.path.join(folder, "tokenizer_config.json"), {"do_lower_case": True, "model_max_length": 16,
                                                          "tokenizer_class": "BertTokenizer"})
    _json(os.path.join(folder, "sentence_bert_config.json"), {"transformer_task": "feature-extraction",
                                                              "module_output_name": "token_embeddings"})
    encoder = build_encoder(EncoderConfig(spec=folder))
    assert encoder.tokenizer.vocabulary == vocabulary
    assert encoder.encoder_config.max_seq_len == encoder.model_max_seq_len == 16
    np.testing.assert_allclose(encoder(tf.constant(TEXTS[:2]))["embedding"].numpy(),
                               _unit(_mean(*(t[:2] for t in tokens_out))), atol=1e-5)  # short ones: untruncated
    # A model_max_length beyond the position embeddings (or HF's "unset" 1e30) is capped at them.
    _json(os.path.join(folder, "tokenizer_config.json"), {"do_lower_case": True, "model_max_length": int(1e30)})
    assert build_encoder(EncoderConfig(spec=folder)).encoder_config.max_seq_len == 64


@pytest.mark.parametrize("change,message", [
    (lambda f: _dense(os.path.join(f, "2_Dense"), HIDDEN, 8, True, TANH, 0, weights="bin"),
     r"2_Dense: the Dense module's weights are in pytorch_model.bin only; this toolkit reads safetensors: "
     r"convert it with sentence-transformers"),
    (lambda f: _dense(os.path.join(f, "2_Dense"), HIDDEN, 8, True, TANH, 0, weights=None),
     r"2_Dense/model.safetensors: no such file"),
    (lambda f: _dense(os.path.join(f, "2_Dense"), HIDDEN, 8, True, "torch.nn.modules.activation.ReLU", 0),
     r"2_Dense/config.json: activation_function 'torch.nn.modules.activation.ReLU' is not supported"),
    (lambda f: _dense(os.path.join(f, "2_Dense"), 16, 8, True, TANH, 0),
     r"2_Dense/config.json: in_features 16 does not match the 32-wide embedding"),
    (lambda f: _json(os.path.join(f, "2_Dense", "config.json"),
                     {"in_features": HIDDEN, "out_features": 8, "use_residual": True}),
     r"use_residual is not supported"),
    (lambda f: shutil.rmtree(os.path.join(f, "2_Dense")),
     r"2_Dense/config.json: no such file \(named by modules.json\)"),
])
def test_a_dense_module_that_cannot_be_read_is_one_line_naming_it(hf_dir, tmp_path, change, message):
    folder, _ = st_folder(tmp_path, hf_dir, "st", pooling=ST6_MEAN, dense=[(HIDDEN, 8, True, TANH)])
    for name in os.listdir(os.path.join(folder, "2_Dense")):
        os.remove(os.path.join(folder, "2_Dense", name))
    change(folder)
    with pytest.raises(UserError, match=message) as error:
        SentenceModel(folder)
    assert "\n" not in str(error.value) and str(error.value).startswith(folder)


def _modules(folder, kinds):
    _json(os.path.join(folder, "modules.json"),
          [{"idx": i, "name": str(i), "path": path, "type": f"sentence_transformers.models.{kind}"}
           for i, (kind, path) in enumerate(kinds)])


@pytest.mark.parametrize("change,message", [
    (lambda f: _modules(f, [("Transformer", ""), ("Pooling", "1_Pooling"), ("LayerNorm", "2_LayerNorm")]),
     r"modules.json: module 'sentence_transformers.models.LayerNorm' is not supported"),
    (lambda f: _modules(f, [("Transformer", "0_Transformer"), ("Pooling", "1_Pooling")]),
     r"modules.json: the first module must be the Transformer at the folder's root.*SentenceTransformer\(folder\)"),
    (lambda f: _modules(f, [("Transformer", ""), ("Pooling", "1_Pooling"), ("Normalize", "2_Normalize"),
                            ("Dense", "3_Dense")]),
     r"modules.json: only a last Normalize is supported"),
    (lambda f: _modules(f, [("Transformer", "")]), r"expected the Transformer, then one Pooling module"),
    (lambda f: open(os.path.join(f, "modules.json"), "w").write("[{"), r"modules.json: not valid JSON"),
    (lambda f: os.remove(os.path.join(f, "1_Pooling", "config.json")),
     r"1_Pooling/config.json: no such file \(named by modules.json\)"),
    (lambda f: _json(os.path.join(f, "sentence_bert_config.json"), {"do_lower_case": True}) or _json(
        os.path.join(f, "tokenizer_config.json"), {"do_lower_case": False}),
     r"sentence_bert_config.json: do_lower_case lower-cases the text before a cased tokenizer"),
    (lambda f: (os.makedirs(os.path.join(f, "2_Normalize")), _modules(
        f, [("Transformer", ""), ("Pooling", "1_Pooling"), ("Normalize", "2_Normalize")]), _json(
        os.path.join(f, "2_Normalize", "config.json"), {"module_input_name": "token_embeddings"})),
     r"2_Normalize/config.json: Normalize of 'token_embeddings' is not supported"),
])
def test_a_folder_layout_that_cannot_be_read_is_one_line_naming_the_file(hf_dir, tmp_path, change, message):
    folder, _ = st_folder(tmp_path, hf_dir, "st", pooling=ST6_MEAN)
    change(folder)
    with pytest.raises(UserError, match=message) as error:
        SentenceModel(folder)
    assert "\n" not in str(error.value) and str(error.value).startswith(folder)


def test_weights_in_pytorch_model_bin_only_say_how_to_convert(hf_dir, tmp_path):
    for name in ("hf", "st"):
        folder = st_folder(tmp_path, hf_dir, name)[0] if name == "st" else shutil.copytree(hf_dir, tmp_path / name)
        os.rename(os.path.join(folder, "model.safetensors"), os.path.join(folder, "pytorch_model.bin"))
        with pytest.raises(UserError, match=r"its weights are in pytorch_model.bin only; this toolkit reads "
                                            r"model.safetensors: convert it with sentence-transformers.*"
                                            r"SentenceTransformer\('.*'\)\.save\('.*-safetensors'\)") as error:
            SentenceModel(str(folder))
        assert "\n" not in str(error.value)


def test_a_truncated_safetensors_file_ends_a_script_in_one_line_with_exit_code_2(hf_dir, tmp_path):
    folder, _ = st_folder(tmp_path, hf_dir, "st", pooling=ST6_MEAN, dense=[(HIDDEN, 8, True, TANH)])
    for path in (os.path.join(folder, "2_Dense", "model.safetensors"), os.path.join(folder, "model.safetensors")):
        data = open(path, "rb").read()
        open(path, "wb").write(data[: len(data) // 2])
        with pytest.raises(UserError, match="not a readable safetensors file .*it is truncated or corrupt: "
                                            "download or copy it again") as error:
            build_encoder(EncoderConfig(spec=folder))
        assert str(error.value).startswith(path + ": ")
        open(path, "wb").write(data)
    path = os.path.join(folder, "model.safetensors")
    open(path, "wb").write(open(path, "rb").read()[:1000])
    proc = run_script("export.py", [f"--model={folder}", "--format=sentence-transformers", f"--out={tmp_path / 'out'}"],
                      cwd=str(tmp_path))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert proc.stderr.strip().splitlines()[-1].startswith(f"export.py: {path}: not a readable safetensors file")
