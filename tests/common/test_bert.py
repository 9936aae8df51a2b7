import os

import numpy as np
import pytest
import tensorflow as tf

from common.models.encoder import EncoderConfig, build_encoder, minilm_dir
from fixtures import write_hf_bert_dir
from numpy_bert import bert_mean_pooled

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
    (tmp_path / "hf" / "config.json").write_text((tmp_path / "hf" / "config.json").read_text().replace('"gelu"', '"gelu_new"'))
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


def test_exported_state_dict_is_the_checkpoint_that_was_loaded(tmp_path):
    """`hf_state_dict` inverts `load_hf_weights` through the one key-name map, bit for bit."""
    from safetensors.numpy import load_file

    from common.models.bert import hf_state_dict

    model_dir = write_hf_bert_dir(str(tmp_path / "hf"), os.path.join(minilm_dir(), "vocab.txt"))
    encoder = build_encoder(EncoderConfig(spec=model_dir))
    want = {k.removeprefix("bert."): v for k, v in load_file(f"{model_dir}/model.safetensors").items()}
    got = hf_state_dict(encoder.backbone)
    assert sorted(got) == sorted(want)
    for name, value in want.items():
        np.testing.assert_array_equal(got[name], value, err_msg=name)
