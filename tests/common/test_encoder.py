"""SentenceEncoder: a get_config round trip rebuilds the same model without reading
weights, and the encoder gives an MLM head what it needs without a forward pass."""

import numpy as np
import pytest
import tensorflow as tf

from common.models import bert as bert_lib
from common.models.encoder import EncoderConfig, SentenceEncoder, build_encoder
from common.models.masked_lm import MaskedLMHead

SENTENCES = tf.constant(["a man plays a guitar .", "stocks fell sharply on monday ."])


def test_get_config_round_trip_gives_the_same_model_without_reading_weights(monkeypatch):
    encoder = build_encoder(EncoderConfig(spec="minilm", max_seq_len=64))
    config = encoder.get_config()

    def no_disk(*args, **kwargs):
        raise AssertionError("from_config read a checkpoint")

    monkeypatch.setattr(bert_lib, "hf_tensors", no_disk)
    monkeypatch.setattr(bert_lib, "load_hf_weights", no_disk)
    clone = SentenceEncoder.from_config(config)
    clone(SENTENCES)  # builds its variables
    assert clone.encoder_config == encoder.encoder_config and clone.tokenizer.config == encoder.tokenizer.config
    # Fresh weights first (no checkpoint was read), then the same weights give the same embeddings.
    assert not np.allclose(clone.embed_strings(SENTENCES), encoder.embed_strings(SENTENCES), atol=1e-3)
    clone.set_weights(encoder.get_weights())
    np.testing.assert_allclose(clone.embed_strings(SENTENCES), encoder.embed_strings(SENTENCES), atol=1e-6)


def test_what_an_mlm_head_needs_comes_from_the_encoder(tiny_encoder, monkeypatch):
    def no_forward(*args, **kwargs):
        raise AssertionError("hidden_size ran the model")

    monkeypatch.setattr(type(tiny_encoder), "call", no_forward)
    assert tiny_encoder.hidden_size == 32
    assert tiny_encoder.layer_norm_epsilon == pytest.approx(1e-12)
    assert tuple(tiny_encoder.token_embedding_matrix().shape) == (tiny_encoder.tokenizer.vocabulary_size, 32)
    assert tiny_encoder.pretrained_head_tensors == {}  # a random tiny BERT has no pretrained head


def test_mlm_head_is_tied_and_loads_a_pretrained_head(tiny_encoder):
    head = MaskedLMHead.for_encoder(tiny_encoder)
    logits = head(tf.zeros([3, 32]))
    assert tuple(logits.shape) == (3, tiny_encoder.tokenizer.vocabulary_size)
    # Tied: the decoder is the encoder's embedding matrix itself, not a copy.
    assert head._embeddings() is tiny_encoder.token_embedding_matrix()
    tensors = {"cls.predictions.transform.dense.weight": np.full([32, 32], 0.5, np.float32),
               "cls.predictions.transform.dense.bias": np.zeros([32], np.float32),
               "cls.predictions.transform.LayerNorm.weight": np.ones([32], np.float32),
               "cls.predictions.transform.LayerNorm.bias": np.zeros([32], np.float32),
               "cls.predictions.bias": np.full([tiny_encoder.tokenizer.vocabulary_size], 0.25, np.float32)}
    assert head.load_hf_head(tensors, "test")
    np.testing.assert_array_equal(head.bias.numpy(), tensors["cls.predictions.bias"])
