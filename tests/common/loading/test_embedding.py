"""Batched embedding: batches sorted by token count, the same embeddings in the original order."""

import numpy as np
import pytest
import tensorflow as tf

from common.loading.embedding import embed_sentences, sort_lengths

# Lengths in characters and in word pieces disagree on purpose: long words, numbers, accents.
SENTENCES = [
    "A man is playing a guitar.",
    "",
    "Supercalifragilisticexpialidocious antidisestablishmentarianism.",
    "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35",
    "Crème brûlée, isn't it?",
    "ok",
    "The quick brown fox jumps over the lazy dog while the cat sleeps on the warm mat.",
    "Électricité",
] * 5


def test_token_counts_are_the_unpadded_lengths_the_tokenizer_gives(tiny_encoder):
    """[CLS] + pieces truncated to max_seq_len - 2 + [SEP]: the mask's row sums, long sentences included."""
    counts = tiny_encoder.token_counts(tf.constant(SENTENCES)).numpy()
    mask = tiny_encoder.tokenize(tf.constant(SENTENCES))["padding_mask"].numpy()
    np.testing.assert_array_equal(counts, mask.sum(1))
    assert counts.max() == 32 and counts.min() == 2  # truncated at max_seq_len=32; "" is [CLS] [SEP]


def test_token_sorted_batches_give_each_sentence_its_own_embedding(tiny_encoder):
    fn = tiny_encoder.embedding_function()
    assert hasattr(fn, "token_counts")
    alone = np.concatenate([fn(tf.constant([s])).numpy() for s in SENTENCES])
    by_tokens = embed_sentences(fn, SENTENCES, batch_size=6, progress=False)
    by_chars = embed_sentences(tf.function(tiny_encoder.embed_strings), SENTENCES, batch_size=6, progress=False)
    np.testing.assert_allclose(by_tokens, alone, atol=1e-6)
    np.testing.assert_allclose(by_tokens, by_chars, atol=1e-6)


def test_batches_hold_sentences_of_neighbouring_token_counts(tiny_encoder):
    fn = tiny_encoder.embedding_function()
    seen = []

    def recording(batch):
        seen.append(fn.token_counts(batch).numpy())
        return fn(batch)

    recording.token_counts = fn.token_counts
    embed_sentences(recording, SENTENCES, batch_size=5, progress=False)
    flat = np.concatenate(seen)
    assert (np.diff(flat) <= 0).all()  # longest first, never a longer one after a shorter
    # A function without a counter is sorted by characters (exported models from before).
    np.testing.assert_array_equal(sort_lengths(lambda b: b, SENTENCES), [len(s) for s in SENTENCES])


def test_exported_and_resolved_models_carry_their_token_counter(tiny_encoder, tmp_path):
    from common.loading.resolve import resolve_model
    from common.export.saved_model import export_encoder

    path = str(tmp_path / "embedding")
    export_encoder(tiny_encoder, path)
    embedder = resolve_model(path)
    want = tiny_encoder.token_counts(tf.constant(SENTENCES)).numpy()
    np.testing.assert_array_equal(embedder.embed_fn.token_counts(tf.constant(SENTENCES)).numpy(), want)
    np.testing.assert_allclose(embedder.embed(SENTENCES, 4, progress=False),
                               embed_sentences(tiny_encoder.embedding_function(), SENTENCES, 4, progress=False),
                               atol=1e-6)
    assert hasattr(resolve_model("random_tiny").embed_fn, "token_counts")


def _padding_share(lengths, order, batch_size):
    padded = real = 0
    for start in range(0, len(order), batch_size):
        batch = lengths[order[start:start + batch_size]]
        padded += batch.max() * len(batch)
        real += batch.sum()
    return 1 - real / padded


def test_sts_b_test_embeddings_do_not_depend_on_the_sort(data_path):
    """Sorted by tokens or by characters, an encoder gives the same STS-B test embeddings (1e-6)
    and the same Spearman; sorting by tokens pads far less. Padding is masked whatever the
    weights, so a random 1-layer BERT with MiniLM's vocabulary, untruncated, shows it (MiniLM's
    own scores, sorted by tokens, are checked against the published ones in test_sts.py)."""
    from common.data.sts import load_stsb
    from common.evaluation.sts import pairs_spearman
    from common.models.encoder import EncoderConfig, build_encoder

    encoder = build_encoder(EncoderConfig(spec="random_tiny", seed=1))
    pairs = load_stsb(data_path, "test")
    sentences = sorted(set(pairs.sentences1 + pairs.sentences2))
    fn = encoder.embedding_function()
    by_tokens = embed_sentences(fn, sentences, 128, progress=False)
    by_chars = embed_sentences(tf.function(encoder.embed_strings), sentences, 128, progress=False)
    np.testing.assert_allclose(by_tokens, by_chars, atol=1e-6)
    vectors = dict(zip(sentences, by_tokens))
    embed = lambda s: np.stack([vectors[x] for x in s])  # noqa: E731
    chars = dict(zip(sentences, by_chars))
    assert pairs_spearman(embed, pairs) == pytest.approx(
        pairs_spearman(lambda s: np.stack([chars[x] for x in s]), pairs), abs=1e-9)
    tokens = sort_lengths(fn, sentences)
    by_token_order = np.argsort(-tokens, kind="stable")
    by_char_order = np.argsort(-np.array([len(s) for s in sentences]), kind="stable")
    assert _padding_share(tokens, by_token_order, 128) < 0.5 * _padding_share(tokens, by_char_order, 128)
