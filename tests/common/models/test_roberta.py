"""RoBERTa-family folders: exact weights and positions against the NumPy reference, no downloads."""

import json

import numpy as np
import pytest
import tensorflow as tf

from common.models.encoder import EncoderConfig, build_encoder
from common.export.saved_model import export_encoder
from common.models.masked_lm import MaskedLMHead
from fixtures import rebuilt_from_config, write_hf_roberta_dir
from numpy_bert import bert_last_hidden, bert_mean_pooled, mlm_logits

# Different lengths, so that rows are padded and RoBERTa's position ids matter.
SENTENCES = ["A man is playing a guitar.", "", "Café  naïve 😀 — don't!", "short", "你好世界 " * 6]


def _max_diff(encoder, model_dir):
    tokens = encoder.tokenize(tf.constant(SENTENCES))
    got = encoder(tf.constant(SENTENCES))["pooled"].numpy()
    want = bert_mean_pooled(model_dir, tokens["token_ids"].numpy(), tokens["padding_mask"].numpy())
    return float(np.abs(got - want).max())


@pytest.mark.parametrize("layout", ["prefixed", "unprefixed", "tokenizer_json"])
def test_roberta_folder_matches_numpy_reference(tmp_path, layout):
    model_dir = write_hf_roberta_dir(str(tmp_path / "rb"), prefixed=layout == "prefixed",
                                     tokenizer_json=layout == "tokenizer_json")
    encoder = build_encoder(EncoderConfig(spec=model_dir))
    assert encoder.backbone.config.model_type == "roberta" and encoder.backbone.config.type_vocab_size == 1
    diff = _max_diff(encoder, model_dir)
    print(f"roberta {layout}: max |diff| {diff:.2e}")
    assert diff < 1e-5


def test_every_token_output_matches_including_padding(tmp_path):
    """Padded positions sit at pad_token_id, as in HF: the whole sequence output agrees."""
    model_dir = write_hf_roberta_dir(str(tmp_path / "rb"))
    encoder = build_encoder(EncoderConfig(spec=model_dir))
    out = encoder(tf.constant(SENTENCES))
    want = bert_last_hidden(model_dir, out["token_ids"].numpy(), out["padding_mask"].numpy())
    np.testing.assert_allclose(out["sequence_output"].numpy(), want, atol=1e-5)


def test_framing_and_bert_positions_would_be_detected(tmp_path):
    """`<s> ... </s>` framing, and the reference tells RoBERTa's positions from BERT's."""
    model_dir = write_hf_roberta_dir(str(tmp_path / "rb"))
    encoder = build_encoder(EncoderConfig(spec=model_dir))
    tokens = encoder.tokenize(tf.constant(["short"]))
    ids = tokens["token_ids"].numpy()[0]
    vocab = json.load(open(f"{model_dir}/vocab.json"))
    assert ids[0] == vocab["<s>"] and ids[-1] == vocab["</s>"]
    roberta = bert_mean_pooled(model_dir, tokens["token_ids"].numpy(), tokens["padding_mask"].numpy())
    cfg = json.load(open(f"{model_dir}/config.json"))
    (tmp_path / "rb" / "config.json").write_text(json.dumps({**cfg, "model_type": "bert"}))
    as_bert = bert_mean_pooled(model_dir, tokens["token_ids"].numpy(), tokens["padding_mask"].numpy())
    assert np.abs(roberta - as_bert).max() > 1e-3


def test_distilroberta_shapes_come_from_the_config(tmp_path):
    model_dir = write_hf_roberta_dir(str(tmp_path / "rb"), num_layers=6, prefixed=False)
    encoder = build_encoder(EncoderConfig(spec=model_dir, pooling="cls"))
    assert len(encoder.backbone.transformer_layers) == 6
    tokens = encoder.tokenize(tf.constant(SENTENCES))
    got = encoder(tf.constant(SENTENCES))["pooled"].numpy()
    want = bert_last_hidden(model_dir, tokens["token_ids"].numpy(), tokens["padding_mask"].numpy())[:, 0]
    np.testing.assert_allclose(got, want, atol=1e-5)


def test_masked_lm_head_loads_from_the_folder_and_matches_numpy_reference(tmp_path):
    """RobertaForMaskedLM's `lm_head.*`, decoder tied to the word embeddings: logits at every real
    position equal the NumPy head's; `<mask>` is the vocabulary's."""
    model_dir = write_hf_roberta_dir(str(tmp_path / "rb"), lm_head=True)
    encoder = build_encoder(EncoderConfig(spec=model_dir))
    head = MaskedLMHead.for_encoder(encoder)
    out = encoder(tf.constant(SENTENCES))
    real = out["padding_mask"].numpy() > 0
    got = head(tf.boolean_mask(out["sequence_output"], real)).numpy()  # [M, vocab]
    want = mlm_logits(model_dir, bert_last_hidden(model_dir, out["token_ids"].numpy(), real.astype(np.int32))[real])
    diff = float(np.abs(got - want).max())
    print(f"roberta MLM head: max |diff| {diff:.2e} over {got.size} logits")
    assert diff < 1e-5 and np.abs(want).max() > 0.5  # logits of a size a wrong term would show in
    vocab = json.load(open(f"{model_dir}/vocab.json"))
    assert encoder.tokenizer.mask_id == vocab["<mask>"] != encoder.tokenizer.unk_id

    # A checkpoint may hold the tied decoder (older conversions do); an untied one is refused.
    tensors = encoder.pretrained_head_tensors
    embeddings = encoder.token_embedding_matrix().numpy()
    assert head.load_hf_head({**tensors, "lm_head.decoder.weight": embeddings}, "tied", "roberta")
    with pytest.raises(ValueError, match=r"untied: lm_head.decoder.weight differs from the word embeddings"):
        head.load_hf_head({**tensors, "lm_head.decoder.weight": embeddings + 1}, "untied", "roberta")
    # A folder without the head (RobertaModel's) leaves it random, with a warning naming lm_head.
    assert not head.load_hf_head({}, "bare", "roberta")


def test_cross_encoder_pairs_are_framed_as_roberta(tmp_path):
    model_dir = write_hf_roberta_dir(str(tmp_path / "rb"))
    encoder = build_encoder(EncoderConfig(spec=model_dir))
    vocab = json.load(open(f"{model_dir}/vocab.json"))
    pair = encoder.tokenizer.tokenize_pairs(tf.constant(["a man"]), tf.constant(["a dog"]))
    ids = list(pair["token_ids"].numpy()[0])
    a = list(encoder.tokenizer.wordpiece_ids(tf.constant(["a man"])).to_list()[0])
    b = list(encoder.tokenizer.wordpiece_ids(tf.constant(["a dog"])).to_list()[0])
    s, e = vocab["<s>"], vocab["</s>"]
    assert ids == [s, *a, e, e, *b, e]
    assert not pair["segment_ids"].numpy().any()


def test_config_round_trip_and_saved_model_export(tmp_path):
    model_dir = write_hf_roberta_dir(str(tmp_path / "rb"))
    encoder = build_encoder(EncoderConfig(spec=model_dir, max_seq_len=16))
    copy = rebuilt_from_config(encoder)
    copy.set_weights(encoder.get_weights())
    want = encoder(tf.constant(SENTENCES))["embedding"].numpy()
    np.testing.assert_allclose(copy(tf.constant(SENTENCES))["embedding"].numpy(), want, atol=1e-6)
    export_encoder(encoder, str(tmp_path / "sm"))
    served = tf.saved_model.load(str(tmp_path / "sm")).signatures["serving_default"](sentences=tf.constant(SENTENCES))
    np.testing.assert_allclose(served["embeddings"].numpy(), want, atol=1e-5)


def test_bad_roberta_folders_are_one_line_errors(tmp_path):
    model_dir = write_hf_roberta_dir(str(tmp_path / "rb"))
    with pytest.raises(ValueError, match=r"max_seq_len=65 exceeds .* \(64 tokens\)"):
        build_encoder(EncoderConfig(spec=model_dir, max_seq_len=65))
    (tmp_path / "rb" / "merges.txt").unlink()
    with pytest.raises(ValueError, match=r"needs vocab.json and merges.txt, or tokenizer.json; found \['vocab.json'\]"):
        build_encoder(EncoderConfig(spec=model_dir))


def test_sentence_transformers_export_loads_back_equal(tmp_path):
    from tokenizers import Tokenizer

    from common.export import ExportConfig, export_model

    model_dir = write_hf_roberta_dir(str(tmp_path / "rb"))
    out = str(tmp_path / "st")
    export_model(ExportConfig(model=model_dir, format="sentence-transformers", out=out, max_seq_len=32))
    source = build_encoder(EncoderConfig(spec=model_dir, max_seq_len=32))
    reloaded = build_encoder(EncoderConfig(spec=out))
    assert reloaded.encoder_config.max_seq_len == 32 and reloaded.backbone.config.model_type == "roberta"
    want = source(tf.constant(SENTENCES))["embedding"].numpy()
    diff = float(np.abs(reloaded(tf.constant(SENTENCES))["embedding"].numpy() - want).max())
    print(f"roberta sentence-transformers round trip: max |diff| {diff:.2e}")
    assert diff < 1e-5
    # The written tokenizer.json is Hugging Face's RoBERTa tokenizer over the same files.
    hf = Tokenizer.from_file(f"{out}/tokenizer.json")
    hf.enable_truncation(max_length=32)  # sentence-transformers truncates at max_seq_length
    ours = reloaded.tokenizer(tf.constant(SENTENCES))
    rows = [list(i[m == 1]) for i, m in zip(ours["token_ids"].numpy(), ours["padding_mask"].numpy())]
    assert rows == [hf.encode(s).ids for s in SENTENCES]
    pair = reloaded.tokenizer.tokenize_pairs(tf.constant(SENTENCES[:1]), tf.constant(SENTENCES[3:4]))
    assert list(pair["token_ids"].numpy()[0]) == hf.encode(SENTENCES[0], SENTENCES[3]).ids
    with pytest.raises(ValueError, match="--format=tflite packs a WordPiece"):
        export_model(ExportConfig(model=model_dir, format="tflite", out=str(tmp_path / "tfl"), max_seq_len=32))
