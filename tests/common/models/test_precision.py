"""--precision=fp32|bf16|fp16: per-layer dtype policies, float32 where claimed, training and flags."""

import json
import os

import keras
import numpy as np
import pytest
import scipy.special
import tensorflow as tf

from common.models.encoder import EncoderConfig, build_encoder
from common.models.masked_lm import MaskedLMHead
from common.models.precision import check_precision, gelu_erf, gelu_float32
from distributed_checks import replica_check
from in_process import run_script

SENTENCES = ["a man plays a guitar .", "two dogs run outside .", "a child eats an apple .", "stocks fell today .",
             "it rains in london .", "a cat sleeps on the mat ."]
COMPUTE = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}


def _tiny(precision, **kwargs):
    return build_encoder(EncoderConfig(spec="random_tiny", max_seq_len=16, seed=2, precision=precision, **kwargs))


@pytest.mark.parametrize("precision", ["fp32", "bf16", "fp16"])
def test_dense_layers_compute_in_the_precision_with_float32_variables(precision):
    encoder = _tiny(precision)
    backbone = encoder.backbone
    layer = backbone.transformer_layers[0]
    dense = [layer._feedforward_intermediate_dense, layer._feedforward_output_dense, backbone.pooled_dense,
             layer._self_attention_layer._query_dense, layer._self_attention_layer._output_dense]
    assert {d.compute_dtype for d in dense} == {COMPUTE[precision]}
    assert {v.dtype for v in encoder.weights} == {"float32"}
    out = encoder(tf.constant(SENTENCES))
    assert out["embedding"].dtype == tf.float32 and out["sequence_output"].dtype == tf.float32


def test_fp32_computes_gelu_in_the_erf_form_without_casts():
    encoder = _tiny("fp32")
    assert encoder.backbone.transformer_layers[0]._feedforward_intermediate_dense.activation is gelu_erf
    ops = _ops(encoder)
    assert [op.type for op in ops if op.type in ("Erf", "Erfc")] == ["Erf"] * len(encoder.backbone.transformer_layers)
    assert not [op for op in ops if op.type == "Cast" and tf.float32 in (op.inputs[0].dtype, op.outputs[0].dtype)
                and {op.inputs[0].dtype, op.outputs[0].dtype} & {tf.bfloat16, tf.float16}]


def test_gelu_erf_is_tensorflows_exact_gelu_in_value_and_gradient():
    x = tf.constant(np.linspace(-12, 12, 4097), tf.float32)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        ours, theirs = gelu_erf(x), tf.nn.gelu(x, approximate=False)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=0, atol=2e-6)
    np.testing.assert_allclose(tape.gradient(ours, x).numpy(), tape.gradient(theirs, x).numpy(), rtol=0, atol=2e-6)
    # and it is the erf form itself, not an approximation of it
    np.testing.assert_allclose(ours.numpy(), 0.5 * x.numpy() * (1 + scipy.special.erf(x.numpy() / np.sqrt(2))),
                               rtol=0, atol=2e-6)


def _ops(encoder):
    fn = tf.function(encoder.embed_strings).get_concrete_function(tf.TensorSpec([None], tf.string))
    return fn.graph.get_operations()


def _training_ops(encoder):
    tokens = encoder.tokenize(tf.constant(SENTENCES))
    fn = tf.function(lambda: encoder(tokens, training=True)["embedding"]).get_concrete_function()
    return fn.graph.get_operations()


@pytest.mark.parametrize("precision", ["bf16", "fp16"])
def test_gelu_and_layer_norm_statistics_are_float32_inside_a_mixed_model(precision):
    from common.models.precision import onednn_cpu

    encoder = _tiny(precision)
    layer = encoder.backbone.transformer_layers[0]
    assert layer._feedforward_intermediate_dense.activation is gelu_float32
    fused_inference = precision == "bf16" and onednn_cpu()  # CI's x86 CPU: see the next test
    assert layer.inference_activation is (gelu_erf if fused_inference else None)
    for ops, training in ((_training_ops(encoder), True), (_ops(encoder), False)):
        erf = [op for op in ops if op.type in ("Erf", "Erfc")]
        rsqrt = [op for op in ops if op.type == "Rsqrt"]  # LayerNorm's 1/sqrt(variance + eps)
        matmuls = [op for op in ops if op.type in ("MatMul", "BatchMatMulV2", "Einsum")]
        # One GELU per layer; 2 LayerNorms per layer plus the embeddings' one.
        layers = len(encoder.backbone.transformer_layers)
        assert len(erf) == layers and len(rsqrt) == 2 * layers + 1 and matmuls
        assert {op.outputs[0].dtype for op in rsqrt} == {tf.float32}
        gelu_dtype = tf.bfloat16 if fused_inference and not training else tf.float32
        assert {op.outputs[0].dtype for op in erf} == {gelu_dtype}
        assert {op.outputs[0].dtype for op in matmuls} == {tf.as_dtype(COMPUTE[precision])}
    x = tf.constant(np.linspace(-4, 4, 64), tf.bfloat16)
    np.testing.assert_array_equal(gelu_float32(x).numpy(),
                                  tf.cast(gelu_erf(tf.cast(x, tf.float32)), tf.bfloat16).numpy())


@pytest.mark.parametrize("precision", ["bf16", "fp16"])
def test_mlm_head_computes_in_the_precision_and_returns_float32_logits(precision):
    encoder = _tiny(precision)
    head = MaskedLMHead.for_encoder(encoder)
    assert head.transform.compute_dtype == COMPUTE[precision] and head.bias.dtype == "float32"
    logits = head(tf.zeros([3, encoder.hidden_size]))
    assert logits.dtype == tf.float32 and logits.shape == (3, encoder.tokenizer.vocabulary_size)


def _train_steps(model, data, steps=3):
    model.compile(optimizer=keras.optimizers.Adam(1e-3), jit_compile=False)
    model.optimizer.build(model.trainable_variables)
    before = [v.numpy().copy() for v in model.trainable_variables]
    step = tf.function(model.train_step)
    losses = [float(step(data)["loss"][0]) for _ in range(steps)]
    moved = max(float(np.abs(b - v.numpy()).max()) for b, v in zip(before, model.trainable_variables))
    return losses, moved


@pytest.mark.parametrize("precision", ["bf16", "fp16"])
def test_simcse_trains_in_the_precision(precision):
    from simcse_tf.model import SimcseModel

    # Seeded here, so the dropout masks (and with them whether an fp16 step overflows) do not depend on
    # which tests ran before in this process; fp16 gets steps enough for its loss scale (2^15 at the
    # start, halved at each overflow) to come down to where a step applies.
    keras.utils.set_random_seed(0)
    steps = 8 if precision == "fp16" else 3
    model = SimcseModel(_tiny(precision, pooling="cls"), mode="unsup", mlp=True)
    tokens = model.encoder.tokenizer(tf.constant(SENTENCES))
    losses, moved = _train_steps(model, {"sentences": tokens}, steps)
    assert np.all(np.isfinite(losses)) and moved > 1e-4
    assert int(model.optimizer.iterations) == steps  # a skipped fp16 step still counts
    if precision == "fp16":
        assert model.loss_scale is not None and float(model.loss_scale.scale) <= 2.0 ** 15
    else:
        assert model.loss_scale is None


@pytest.mark.parametrize("precision", ["bf16", "fp16"])
def test_masked_lm_trains_in_the_precision(precision):
    from mlm_tf.method import _masked
    from mlm_tf.model import MlmModel

    encoder = _tiny(precision, pooling="mean")
    model = MlmModel(encoder, MaskedLMHead.for_encoder(encoder, name="mlm_head"))
    tokens = encoder.tokenizer(tf.constant(SENTENCES))
    data = _masked(encoder.tokenizer, tokens["token_ids"], tokens["padding_mask"], tf.constant([0, 1], tf.int64), 0.3)
    losses, moved = _train_steps(model, data)
    assert np.all(np.isfinite(losses)) and moved > 1e-4
    assert (model.loss_scale is not None) == (precision == "fp16")


def test_loss_scale_halves_on_overflow_skips_the_update_and_grows_after_finite_steps():
    from simcse_tf.model import SimcseModel

    model = SimcseModel(_tiny("fp16"), mode="unsup")
    scale = model.loss_scale
    scale.scale.assign(2.0 ** 15)
    scale.update(tf.constant(False))
    assert float(scale.scale) == 2.0 ** 14 and int(scale.finite_steps) == 0
    scale.growth_steps = 2
    scale.update(tf.constant(True))
    assert float(scale.scale) == 2.0 ** 14 and int(scale.finite_steps) == 1
    scale.update(tf.constant(True))
    assert float(scale.scale) == 2.0 ** 15 and int(scale.finite_steps) == 0
    # A scale so large that the gradients overflow: no weight changes, the step counts.
    scale.scale.assign(3e38)
    tokens = model.encoder.tokenizer(tf.constant(SENTENCES))
    model.compile(optimizer=keras.optimizers.Adam(1e-3), jit_compile=False)
    model.optimizer.build(model.trainable_variables)
    before = [v.numpy().copy() for v in model.trainable_variables]
    tf.function(model.train_step)({"sentences": tokens})
    assert all(np.array_equal(b, v.numpy()) for b, v in zip(before, model.trainable_variables))
    assert int(model.optimizer.iterations) == 1 and float(scale.scale) == pytest.approx(1.5e38)


def test_fp16_one_replica_agrees_with_two_replicas():
    # The loss scale under tf.distribute (MirroredStrategy on 2 logical CPUs): the step runs, both
    # replicas skip or apply together, and the update matches one replica's. float16 rounding differs
    # with the per-replica batch, so the tolerances are float16's, not assert_replicas_agree's 1e-5.
    r = replica_check("simcse", {"precision": "fp16"})
    assert r["replicas"] == 2 and r["replica_losses"][0] == r["replica_losses"][1], r
    assert r["loss_diff"] < 1e-4 and r["grad_diff"] < 0.5 * r["grad_scale"], r
    assert r["weights_moved"] > 1e-5 and r["weight_diff"] < 0.1 * r["weights_moved"], r


def test_a_bf16_run_records_its_precision_and_exports_a_float32_model(tmp_path):
    from common.loading.resolve import resolve_model
    from common.training import registry
    from common.training.runs import train

    method = registry.get("simcse")
    config = registry.build_config("simcse", {
        **method.smoke(str(tmp_path / "data")), "precision": "bf16", "train_epochs": 1, "train_steps_per_epoch": 2,
        "log_every": 1, "eval_each_epoch": False, "artifacts_dir": str(tmp_path / "artifacts")})
    result = train(config)
    with open(os.path.join(result["model_dir"], "config.json")) as f:
        record = json.load(f)
    assert record["encoder"]["precision"] == "bf16"
    exported = resolve_model(result["model_dir"])  # embedding/: float32 graph and output
    rebuilt32 = resolve_model(result["model_dir"], precision="fp32")
    rebuilt16 = resolve_model(result["model_dir"], precision="bf16")  # the encoder rebuilt from weights/
    assert rebuilt16.source == result["model_dir"] and exported.source.endswith("embedding")
    e = exported.embed(SENTENCES, progress=False)
    assert e.dtype == np.float32
    np.testing.assert_allclose(e, rebuilt32.embed(SENTENCES, progress=False), atol=1e-5)
    np.testing.assert_allclose(e, rebuilt16.embed(SENTENCES, progress=False), atol=5e-2)
    # No bfloat16 anywhere in the exported graph (its functions included).
    graph = exported.embed_fn.saved_model.signatures["serving_default"].graph.as_graph_def()
    types = {value.type for f in graph.library.function for node in f.node_def for value in node.attr.values()}
    assert tf.bfloat16.as_datatype_enum not in types and tf.float32.as_datatype_enum in types


def test_bad_precision_is_one_clear_error():
    with pytest.raises(ValueError, match=r"--precision must be one of fp32, bf16, fp16; got 'fp8'"):
        check_precision("fp8")
    with pytest.raises(ValueError, match="--precision must be one of"):
        build_encoder(EncoderConfig(spec="random_tiny", precision="fp8"))


@pytest.mark.parametrize("script", ["train.py", "test_sts.py"])
def test_scripts_reject_a_bad_precision_in_one_line_with_exit_code_2(script, tmp_path):
    from common.training import registry

    data = registry.get("simcse").smoke(str(tmp_path / "data"))
    args = ["--method=simcse", "--model=random_tiny", f"--train_data={data['train_data'][0]}"] if script == "train.py" \
        else ["--model=random_tiny"]
    proc = run_script(script, [*args, "--precision=fp8", f"--data_path={data['data_path']}",
                               f"--artifacts_dir={tmp_path}"], cwd=str(tmp_path))
    assert proc.returncode == 2, proc.stderr[-2000:]
    # The last line, as tools/reliability.py reports it (TensorFlow may log a CUDA probe before it).
    last = proc.stderr.strip().splitlines()[-1]
    assert last == (f"{script}: --precision must be one of fp32, bf16, fp16; got 'fp8'. "
                    "(--verbose shows the traceback)"), proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr


@pytest.mark.large
def test_bf16_minilm_embeddings_are_within_1e_2_of_fp32(data_path):
    from common.data.sts import load_stsb

    pairs = load_stsb(data_path, "test")
    sentences = list(pairs.sentences1[:32]) + list(pairs.sentences2[:32])
    from common.api import SentenceModel

    fp32 = SentenceModel("minilm").encode(sentences)
    bf16_model = SentenceModel("minilm", precision="bf16")
    bf16 = bf16_model.encode(sentences)
    assert bf16.dtype == np.float32 and bf16.shape == fp32.shape == (64, 384)
    assert np.abs(bf16 - fp32).max() < 1e-2
    assert np.abs(bf16 - fp32).max() > 0  # it did compute in bfloat16
