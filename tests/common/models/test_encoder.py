"""SentenceEncoder: a get_config round trip rebuilds the same model without reading
weights, and the encoder gives an MLM head what it needs without a forward pass."""

import numpy as np
import pytest
import tensorflow as tf

from common.models import hf_weights
from common.models.bert import BertBackbone
from common.models.bert_config import BertConfig
from common.models.encoder import EncoderConfig, SentenceEncoder, build_encoder
from common.models.masked_lm import MaskedLMHead
from fixtures import rebuilt_from_config

SENTENCES = tf.constant(["a man plays a guitar .", "stocks fell sharply on monday ."])


def test_get_config_round_trip_gives_the_same_model_without_reading_weights(monkeypatch):
    encoder = build_encoder(EncoderConfig(spec="minilm", max_seq_len=64))
    config = encoder.get_config()

    def no_disk(*args, **kwargs):
        raise AssertionError("from_config read a checkpoint")

    monkeypatch.setattr(hf_weights, "hf_tensors", no_disk)
    monkeypatch.setattr(hf_weights, "load_hf_weights", no_disk)
    clone = rebuilt_from_config(encoder, config)
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


def _dropout_rates(backbone):
    """The rate of every Dropout layer inside a backbone (embeddings, attention, feed-forward)."""
    import keras

    rates = [layer.rate for layer in backbone._flatten_layers() if isinstance(layer, keras.layers.Dropout)]
    assert rates, "the backbone has no Dropout layers to check"
    return rates


def _hub_names_only_savedmodel(path: str, vocab: str, positions: int) -> str:
    """A TF-Hub-format SavedModel with the variable names of TF Hub's BERTs (`word_embeddings/embeddings`,
    `position_embedding/embeddings`) and a `__call__` that returns zeros: enough to build a tokenizer."""
    from tensorflow.python.trackable.autotrackable import AutoTrackable

    root = AutoTrackable()
    root.variables = [tf.Variable(tf.zeros([30522, 8]), name="word_embeddings/embeddings"),
                      tf.Variable(tf.zeros([positions, 8]), name="position_embedding/embeddings")]
    root.vocab_file = tf.saved_model.Asset(vocab)

    @tf.function
    def call(inputs, training=False):
        zeros = tf.zeros(tf.concat([tf.shape(inputs["input_word_ids"]), [8]], 0))
        return {"sequence_output": zeros, "pooled_output": zeros[:, 0]}

    spec = {k: tf.TensorSpec([None, None], tf.int32, name=k)
            for k in ("input_word_ids", "input_mask", "input_type_ids")}
    call.get_concrete_function(spec, training=False)
    root.__call__ = call
    tf.saved_model.save(root, path)
    return path


def test_without_a_length_an_encoder_truncates_at_the_models_own_maximum(tmp_path, monkeypatch):
    import os

    from common.models.sources.names import TINY_BERT, minilm_dir
    from common.models.sources.fresh import randomize_weights
    from fixtures import write_hf_bert_dir, write_tfhub_bert

    vocab = os.path.join(minilm_dir(), "vocab.txt")
    hf = write_hf_bert_dir(str(tmp_path / "hf"), vocab)  # 64 position embeddings, no sentence_bert_config.json
    hub = _hub_names_only_savedmodel(str(tmp_path / "hub"), vocab, positions=48)
    # sentence-transformers' max_seq_length where the model declares one, else the position embeddings.
    for spec, own in (("minilm", 256), ("random_tiny", 512), ("random_bert_tiny", 512), (hf, 64), (hub, 48)):
        encoder = build_encoder(EncoderConfig(spec=spec))
        assert encoder.model_max_seq_len == encoder.encoder_config.max_seq_len == own, spec
        assert encoder.tokenizer.config.max_seq_len == own, spec
        # A caller's length wins, and the model's own maximum stays what it is.
        short = build_encoder(EncoderConfig(spec=spec, max_seq_len=16))
        assert (short.tokenizer.config.max_seq_len, short.model_max_seq_len) == (16, own), spec
        config = short.get_config()
        assert SentenceEncoder.from_config(config).model_max_seq_len == own, spec
    # A TF-Hub-format BERT whose position table is not named so: a length must be given.
    from common.models import hub_backbone

    backbone = BertBackbone(BertConfig(vocab_size=30522, **{**TINY_BERT, "num_layers": 2}))  # layers read in order
    randomize_weights(backbone, 0)
    unnamed = write_tfhub_bert(str(tmp_path / "unnamed"), backbone, vocab)
    init = hub_backbone.HubBertBackbone.__init__

    def hiding_positions(self, *args, **kwargs):  # the table under another name: not found by name
        init(self, *args, **kwargs)
        self.hub_variables = [v for v in self.hub_variables if "position_embedding" not in v.path + v.name]

    monkeypatch.setattr(hub_backbone.HubBertBackbone, "__init__", hiding_positions)
    with pytest.raises(ValueError, match=r"expected one \[positions, hidden\] position_embedding variable, found "
                                         r"\[\]; give the truncation length \(--max_seq_len\)"):
        build_encoder(EncoderConfig(spec=unnamed))
    assert build_encoder(EncoderConfig(spec=unnamed, max_seq_len=24)).tokenizer.config.max_seq_len == 24
    # Sentences are never padded to the maximum: each batch to its own longest.
    tokens = build_encoder(EncoderConfig(spec="random_tiny")).tokenize(SENTENCES)
    assert tokens["token_ids"].shape[1] == int(tf.reduce_max(tf.reduce_sum(tokens["padding_mask"], 1))) < 16


def test_the_published_form_of_a_trained_encoder_shares_its_weights_at_the_models_own_length():
    from common.models.encoder import inference_encoder

    long = tf.constant([" ".join(["guitar"] * 60), "a man plays a guitar ."])
    trained = build_encoder(EncoderConfig(spec="random_tiny", max_seq_len=16, pad_to_multiple_of=8, seed=3))
    view = trained.with_length()
    assert (view.tokenizer.config.max_seq_len, view.tokenizer.config.pad_to_multiple_of) == (512, 1)
    assert view.backbone is trained.backbone and trained.tokenizer.config.max_seq_len == 16
    assert trained.with_length(16).tokenizer.config.max_seq_len == 16
    assert view.with_length() is view
    full = build_encoder(EncoderConfig(spec="random_tiny", max_seq_len=512, seed=3))
    np.testing.assert_allclose(view.embed_strings(long), full.embed_strings(long), atol=1e-6)
    assert not np.allclose(trained.embed_strings(long)[0], full.embed_strings(long)[0], atol=1e-3)
    published = inference_encoder(trained)
    assert published.backbone is trained.backbone  # fp32, its own dropout: nothing to copy
    np.testing.assert_allclose(published.embed_strings(long), full.embed_strings(long), atol=1e-6)


def test_the_published_form_drops_out_at_the_architectures_rate_not_the_runs():
    from common.models.encoder import inference_encoder

    trained = build_encoder(EncoderConfig(spec="random_tiny", max_seq_len=16, dropout=0.0, precision="bf16"))
    assert set(_dropout_rates(trained.backbone)) == {0.0} and trained.model_dropout == pytest.approx(0.1)
    published = inference_encoder(trained)
    assert set(_dropout_rates(published.backbone)) == {0.1}
    assert published.encoder_config.precision == "fp32" and published.tokenizer.config.max_seq_len == 512
    for a, b in zip(published.backbone.get_weights(), trained.backbone.get_weights()):
        np.testing.assert_array_equal(a, b)


def _notices(caplog):
    return [r.getMessage() for r in caplog.records if "is now spelled" in r.getMessage()]


def test_each_old_spelling_is_the_model_of_its_new_name_with_one_notice_line(monkeypatch, caplog):
    from common.models.sources import locate_spec, names
    from common.models.sources.fresh import fresh_bert_config
    from common.models.sources.names import FRESH_BERTS, SPEC_ALIASES, canonical_spec

    monkeypatch.setattr(names, "_NOTICED", set())  # as in a new process
    assert set(SPEC_ALIASES.values()) == {"tfhub_bert_small", "tfhub_bert_base", "random_tiny", *FRESH_BERTS}
    with caplog.at_level("WARNING"):
        for old, new in SPEC_ALIASES.items():
            assert canonical_spec(old) == canonical_spec(old) == new
            assert locate_spec(old) == locate_spec(new), old
            if new in FRESH_BERTS:  # the same architecture, for the shapes too large to build here
                assert fresh_bert_config(new, 30522).hidden_size == FRESH_BERTS[new][1]
        for spec in ("minilm", "random_bert_tiny", "tfhub_bert_base", "20261122-101500", "some/folder"):
            assert canonical_spec(spec) == spec
        # The random specs small enough to build: the same weights under either name, recorded by the new one.
        for old, new in (("tiny", "random_tiny"), ("bert_tiny", "random_bert_tiny")):
            by_old = build_encoder(EncoderConfig(spec=old, max_seq_len=16, seed=2))
            by_new = build_encoder(EncoderConfig(spec=new, max_seq_len=16, seed=2))
            assert by_old.encoder_config == by_new.encoder_config and by_old.encoder_config.spec == new
            for a, b in zip(by_old.get_weights(), by_new.get_weights()):
                np.testing.assert_array_equal(a, b)
    notices = _notices(caplog)
    assert len(notices) == len(SPEC_ALIASES)  # one per old name, however often it is met
    assert "--model=bert_tiny is now spelled random_bert_tiny (a freshly initialised BERT-tiny, no pretraining); " \
           "the old name still works." in notices
    assert any(n.startswith("--model=small is now spelled tfhub_bert_small (the pretrained TF Hub") for n in notices)


def test_an_unknown_spec_lists_the_new_names_and_says_which_are_pretrained():
    from common.models.sources.names import SPEC_ALIASES

    with pytest.raises(ValueError, match="Unknown encoder spec 'no-such-model'") as error:
        build_encoder(EncoderConfig(spec="no-such-model"))
    message = str(error.value)
    for new in SPEC_ALIASES.values():
        assert f"'{new}'" in message, new
    for old in SPEC_ALIASES:
        assert f"'{old}'" not in message, old
    pretrained, random = message.index("pretrained:"), message.index("fresh, random (no pretraining):")
    assert pretrained < message.index("'tfhub_bert_base'") < random < message.index("'random_bert_base'")
