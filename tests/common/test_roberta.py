"""RoBERTa-family folders: exact weights and positions against the NumPy reference, no downloads."""

import json

import numpy as np
import pytest
import tensorflow as tf

from common.models.encoder import EncoderConfig, SentenceEncoder, build_encoder
from common.models.export import export_encoder
from fixtures import write_hf_roberta_dir
from numpy_bert import bert_last_hidden, bert_mean_pooled

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
    copy = SentenceEncoder.from_config(encoder.get_config())
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

    from common.exporting import ExportConfig, export_model

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


def test_simcse_trains_on_a_tiny_roberta_and_its_published_model_scores(tmp_path):
    """train -> publish -> score: the run's exported SavedModel (raw strings in, the BPE tokenizer
    inside) gives the embeddings of the run's encoder rebuilt from its weights."""
    from common.evaluation.resolve import resolve_encoder, resolve_model
    from common.training import registry
    from common.training.runs import train

    model_dir = write_hf_roberta_dir(str(tmp_path / "rb"))
    settings = {**registry.get("simcse").smoke(str(tmp_path / "data")), "model": model_dir,
                "artifacts_dir": str(tmp_path / "artifacts"), "train_epochs": 1, "train_steps_per_epoch": 2,
                "eval_each_epoch": False}
    run_id = train(registry.build_config("simcse", settings))["run_id"]
    published = resolve_model(run_id, artifacts_dir=str(tmp_path / "artifacts"))
    got = published.embed(SENTENCES, progress=False)
    rebuilt = resolve_encoder(str(tmp_path / "artifacts" / "model" / run_id))
    assert rebuilt.backbone.config.model_type == "roberta"
    np.testing.assert_allclose(got, rebuilt(tf.constant(SENTENCES))["embedding"].numpy(), atol=1e-5)
    before = build_encoder(EncoderConfig(spec=model_dir, max_seq_len=16))(tf.constant(SENTENCES))["embedding"]
    assert np.all(np.isfinite(got)) and np.abs(got - before.numpy()).max() > 0  # the run trained the weights


def test_trans_encoder_cross_encoder_trains_on_a_tiny_roberta(tmp_path):
    """The cross-encoder half encodes pairs with RoBERTa's `<s> a </s></s> b </s>` framing."""
    from common.training import registry
    from common.training.runs import train

    model_dir = write_hf_roberta_dir(str(tmp_path / "rb"))
    settings = {**registry.get("trans_encoder").smoke(str(tmp_path / "data")), "model": model_dir,
                "artifacts_dir": str(tmp_path / "artifacts"), "train_epochs": 1, "train_steps_per_epoch": 1}
    result = train(registry.build_config("trans_encoder", settings))
    assert (tmp_path / "artifacts" / "model" / result["run_id"]).is_dir()
