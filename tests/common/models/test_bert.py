import os
import types

import numpy as np
import pytest
import tensorflow as tf

from common.models.encoder import EncoderConfig, build_encoder
from common.models.sources.names import minilm_dir
from fixtures import write_hf_bert_dir
from numpy_bert import bert_mean_pooled, bert_pooler_output

SENTENCES = ["A man is playing a guitar.", "", "Crème brûlée is a dessert, isn't it?", "short"]


def _compare_to_numpy(encoder, model_dir, atol):
    tokens = encoder.tokenize(tf.constant(SENTENCES))
    got = encoder(tf.constant(SENTENCES))["pooled"].numpy()
    want = bert_mean_pooled(model_dir, tokens["token_ids"].numpy(), tokens["padding_mask"].numpy())
    np.testing.assert_allclose(got, want, atol=atol)


@pytest.mark.parametrize("act", ["gelu", "gelu_new"])
def test_hf_directory_matches_numpy_reference(tmp_path, act):
    model_dir = write_hf_bert_dir(str(tmp_path / "hf"), os.path.join(minilm_dir(), "vocab.txt"), hidden_act=act)
    encoder = build_encoder(EncoderConfig(spec=model_dir))
    assert encoder.encoder_config.pooling == "mean" and encoder.encoder_config.normalize is False
    _compare_to_numpy(encoder, model_dir, atol=1e-4)


def test_wrong_activation_would_be_detected(tmp_path):
    """The reference distinguishes exact from tanh GELU, so the test above can fail."""
    model_dir = write_hf_bert_dir(str(tmp_path / "hf"), os.path.join(minilm_dir(), "vocab.txt"), hidden_act="gelu")
    encoder = build_encoder(EncoderConfig(spec=model_dir))
    tokens = encoder.tokenize(tf.constant(SENTENCES))
    exact = bert_mean_pooled(model_dir, tokens["token_ids"].numpy(), tokens["padding_mask"].numpy())
    (tmp_path / "hf" / "config.json").write_text(
        (tmp_path / "hf" / "config.json").read_text().replace('"gelu"', '"gelu_new"'))
    approx = build_encoder(EncoderConfig(spec=model_dir))(tf.constant(SENTENCES))["pooled"].numpy()
    assert np.abs(approx - exact).max() > 1e-4


@pytest.mark.large
def test_minilm_matches_numpy_reference_and_sentence_transformers_settings(minilm_encoder):
    cfg = minilm_encoder.encoder_config
    assert (cfg.pooling, cfg.normalize, cfg.max_seq_len) == ("mean", True, 256)
    _compare_to_numpy(minilm_encoder, minilm_dir(), atol=1e-4)
    emb = minilm_encoder(tf.constant(SENTENCES))["embedding"].numpy()
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-6)


def test_dynamic_padding_does_not_change_embeddings(tiny_encoder):
    alone = tiny_encoder(tf.constant(["short"]))["embedding"].numpy()
    batched = tiny_encoder(tf.constant(["short", "a much longer sentence with many more tokens"]))["embedding"].numpy()
    np.testing.assert_allclose(alone[0], batched[0], atol=1e-5)


def test_wrong_checkpoint_shape_is_a_clear_error(tmp_path):
    model_dir = write_hf_bert_dir(str(tmp_path / "hf"), os.path.join(minilm_dir(), "vocab.txt"))
    cfg = (tmp_path / "hf" / "config.json").read_text().replace('"intermediate_size": 64', '"intermediate_size": 48')
    (tmp_path / "hf" / "config.json").write_text(cfg)
    # Shapes in the checkpoint's own layout (PyTorch Linear: [out, in]), as the file holds them.
    with pytest.raises(ValueError, match=r"'encoder.layer.0.intermediate.dense.weight' has shape \(64, 32\), "
                                         r"the model expects \(48, 32\)"):
        build_encoder(EncoderConfig(spec=model_dir))


def test_pooler_pooling_gives_hugging_faces_pooler_output(tmp_path):
    model_dir = write_hf_bert_dir(str(tmp_path / "hf"), os.path.join(minilm_dir(), "vocab.txt"))
    encoder = build_encoder(EncoderConfig(spec=model_dir, pooling="pooler"))
    tokens = encoder.tokenize(tf.constant(SENTENCES))
    out = encoder(tf.constant(SENTENCES))
    want = bert_pooler_output(model_dir, tokens["token_ids"].numpy(), tokens["padding_mask"].numpy())
    np.testing.assert_allclose(out["embedding"].numpy(), want, atol=1e-4)
    assert np.abs(out["embedding"].numpy() - out["sequence_output"].numpy()[:, 0]).max() > 1e-2
    # The pooler trains when it is the embedding, and is frozen when nothing reads it.
    assert encoder.backbone.pooled_dense.trainable
    assert not build_encoder(EncoderConfig(spec=model_dir, pooling="cls")).backbone.pooled_dense.trainable


def test_a_checkpoint_without_a_pooler_is_logged_when_the_pooling_needs_one(tmp_path, caplog):
    from safetensors.numpy import load_file, save_file

    model_dir = write_hf_bert_dir(str(tmp_path / "hf"), os.path.join(minilm_dir(), "vocab.txt"))
    path = os.path.join(model_dir, "model.safetensors")
    save_file({k: v for k, v in load_file(path).items() if ".pooler." not in k}, path)  # as BertForMaskedLM saves
    build_encoder(EncoderConfig(spec=model_dir, pooling="mean"))
    assert "no pooler weights" not in caplog.text
    build_encoder(EncoderConfig(spec=model_dir, pooling="pooler"))
    assert "has no pooler weights (pooler.dense.weight, pooler.dense.bias)" in caplog.text


def test_exported_state_dict_is_the_checkpoint_that_was_loaded(tmp_path):
    """`hf_state_dict` inverts `load_hf_weights` through the one key-name map, bit for bit."""
    from safetensors.numpy import load_file

    from common.models.hf_weights import hf_state_dict

    model_dir = write_hf_bert_dir(str(tmp_path / "hf"), os.path.join(minilm_dir(), "vocab.txt"))
    encoder = build_encoder(EncoderConfig(spec=model_dir))
    want = {k.removeprefix("bert."): v for k, v in load_file(f"{model_dir}/model.safetensors").items()}
    got = hf_state_dict(encoder.backbone)
    assert sorted(got) == sorted(want)
    for name, value in want.items():
        np.testing.assert_array_equal(got[name], value, err_msg=name)


# --- BertLayer: keras-hub's TransformerEncoder computed as fusable 2-D matmuls ---------------------------------

def _keras_hub_call(encoder):
    from keras_hub.layers import TransformerEncoder

    for layer in encoder.backbone.transformer_layers:
        layer.call = TransformerEncoder.call.__get__(layer)


def _embed_and_grads(encoder, tokens, training):
    from common.training.loop import rng_variables

    states = [v.numpy().copy() for v in rng_variables(encoder)]
    with tf.GradientTape() as tape:
        out = encoder(tokens, training=training)["embedding"]
        loss = tf.reduce_sum(out * tf.range(1.0, 1.0 + out.shape[-1]))
    grads = tape.gradient(loss, encoder.trainable_variables)
    for v, s in zip(rng_variables(encoder), states):
        v.assign(s)  # the other form replays the same dropout masks
    return out.numpy(), [tf.convert_to_tensor(g).numpy() for g in grads if g is not None]


@pytest.mark.parametrize("training", [False, True])
def test_bert_layer_equals_keras_hubs_transformer_encoder(training):
    encoder = build_encoder(EncoderConfig(spec="random_tiny", max_seq_len=32, seed=3, dropout=0.3))
    tokens = encoder.tokenize(tf.constant(SENTENCES))
    assert {type(layer).__name__ for layer in encoder.backbone.transformer_layers} == {"BertLayer"}
    ours, our_grads = _embed_and_grads(encoder, tokens, training)
    _keras_hub_call(encoder)
    theirs, their_grads = _embed_and_grads(encoder, tokens, training)
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-6)
    assert len(our_grads) == len(their_grads) == len(encoder.trainable_variables)
    for a, b in zip(our_grads, their_grads):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    if training:  # dropout was on, and both forms drew the same masks
        eval_out = encoder(tokens, training=False)["embedding"].numpy()
        assert np.abs(ours - eval_out).max() > 1e-3


def _optimized_ops(encoder):
    """Op types (with their fused ops) of the embedding function after TensorFlow's graph optimizer, as
    the runtime sees it on this machine's CPU."""
    from tensorflow.core.protobuf import config_pb2
    from tensorflow.python.framework import meta_graph
    from tensorflow.python.grappler import tf_optimizer

    fn = encoder.embedding_function().get_concrete_function()
    graph_def = fn.graph.as_graph_def()
    cpu = "/job:localhost/replica:0/task:0/device:CPU:0"
    for node in graph_def.node:
        node.device = cpu
    for function in graph_def.library.function:
        for node in function.node_def:
            node.device = cpu
    meta = meta_graph.export_scoped_meta_graph(graph_def=graph_def, graph=fn.graph)[0]
    meta.collection_def["train_op"].node_list.value.extend([t.name.split(":")[0] for t in fn.graph.outputs])
    config = config_pb2.ConfigProto()
    config.graph_options.rewrite_options.min_graph_nodes = -1
    optimized = tf_optimizer.OptimizeGraph(config, meta)
    nodes = list(optimized.node) + [n for f in optimized.library.function for n in f.node_def]
    return [(n.op, tuple(x.decode() for x in n.attr["fused_ops"].list.s)) for n in nodes]


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_every_dense_product_of_a_layer_is_one_fused_kernel(precision):
    from common.models.precision import onednn_cpu

    encoder = build_encoder(EncoderConfig(spec="random_tiny", max_seq_len=32, seed=3, precision=precision))
    ops = _optimized_ops(encoder)
    layers = len(encoder.backbone.transformer_layers)
    products = [(op, f) for op, f in ops if op in ("_FusedMatMul", "MatMul", "Einsum")]
    assert len([op for op, _ in ops if op == "BatchMatMulV2"]) == 2 * layers  # the per-head products
    assert len(products) == 6 * layers and not [op for op, _ in products if op == "Einsum"]
    if onednn_cpu():  # x86 TensorFlow (CI's machine): bias and exact GELU inside the matmul's kernel
        assert sorted(products) == sorted([("_FusedMatMul", ("BiasAdd",))] * 5 * layers
                                          + [("_FusedMatMul", ("BiasAdd", "GeluExact"))] * layers)
        assert not [op for op, _ in ops if op in ("Erf", "Erfc")]


@pytest.mark.grappler
def test_fused_bf16_feed_forward_rounds_once_from_float32():
    """In bf16, the fused kernel adds the bias and applies the GELU to the float32 accumulator and
    rounds once; the same ops unfused (eagerly) round after every step."""
    import scipy.special

    from common.models.bert_layer import _dense_2d
    from common.models.precision import gelu_erf, onednn_cpu

    rng = np.random.default_rng(0)
    x = tf.cast(rng.normal(size=(256, 384)).astype(np.float32), tf.bfloat16)
    kernel = tf.cast((rng.normal(size=(384, 1536)) * 0.05).astype(np.float32), tf.bfloat16)
    bias = tf.cast((rng.normal(size=1536) * 0.5).astype(np.float32), tf.bfloat16)

    layer = types.SimpleNamespace(kernel=kernel, bias=bias)  # what _dense_2d reads of a Dense layer

    def feed_forward():
        return gelu_erf(_dense_2d(x, layer, 1536))

    pre = (tf.cast(x, tf.float32).numpy().astype(np.float64) @ tf.cast(kernel, tf.float32).numpy().astype(np.float64)
           + tf.cast(bias, tf.float32).numpy())
    once = tf.cast(tf.constant(0.5 * pre * (1 + scipy.special.erf(pre / np.sqrt(2))), tf.float32), tf.bfloat16)

    def share_rounded_once(out):
        return float(np.mean(out.numpy() == once.numpy()))

    eager = share_rounded_once(feed_forward())
    assert eager < 0.8  # unfused: the matmul's output, the bias add and each GELU step are rounded
    if onednn_cpu():
        assert share_rounded_once(tf.function(feed_forward)()) > 0.999
