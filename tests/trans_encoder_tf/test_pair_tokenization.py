"""Pair tokenization ([CLS] a [SEP] b [SEP]) against Hugging Face's `tokenizers`."""

import os

import numpy as np
import pytest
import tensorflow as tf

from common.data.sts import load_stsb
from common.models.sources.names import minilm_dir
from common.models.tokenization import BertTokenizer, TokenizerConfig, longest_first_lengths, read_vocabulary


def _hf_tokenizer(max_length):
    from tokenizers import Tokenizer

    hf = Tokenizer.from_file(os.path.join(minilm_dir(), "tokenizer.json"))
    hf.no_padding()
    hf.enable_truncation(max_length=max_length, strategy="longest_first")
    return hf


def _ours(max_length):
    return BertTokenizer(read_vocabulary(os.path.join(minilm_dir(), "vocab.txt")),
                         TokenizerConfig(max_seq_len=max_length))


def _mismatches(tok, hf, firsts, seconds):
    out = tok.tokenize_pairs(tf.constant(firsts), tf.constant(seconds))
    ids, mask, segments = (out[k].numpy() for k in ("token_ids", "padding_mask", "segment_ids"))
    bad = []
    for i, (a, b) in enumerate(zip(firsts, seconds)):
        expected = hf.encode(a, b)
        real = mask[i] == 1
        if ids[i][real].tolist() != expected.ids or segments[i][real].tolist() != expected.type_ids:
            bad.append((a, b))
        if segments[i][~real].any():
            bad.append((a, b, "segment id on padding"))
    return bad


def test_longest_first_lengths_follow_the_tokenizers_formula():
    # (len_a, len_b, budget) -> kept; the odd token goes to the longer side, to b on a tie.
    cases = [((3, 4, 10), (3, 4)), ((20, 3, 10), (7, 3)), ((3, 20, 10), (3, 7)), ((8, 8, 9), (4, 5)),
             ((9, 8, 9), (5, 4)), ((50, 40, 7), (4, 3)), ((0, 30, 5), (0, 5)), ((6, 6, 12), (6, 6))]
    for inputs, expected in cases:
        got = longest_first_lengths(tf.constant([inputs[0]]), tf.constant([inputs[1]]), inputs[2])
        assert (int(got[0][0]), int(got[1][0])) == expected, inputs


def test_pairs_equal_hf_on_short_and_truncated_pairs():
    hf = _hf_tokenizer(12)
    tok = _ours(12)
    firsts = ["A man plays a guitar.", "one two three four five six seven eight nine ten", "", "Café!", "x"]
    seconds = ["Someone is playing music on a very old guitar today.", "short", "", "naïve", "a b c d e f g h"]
    assert _mismatches(tok, hf, firsts, seconds) == []
    out = tok.tokenize_pairs(tf.constant(["hello"]), tf.constant(["world"]))
    np.testing.assert_array_equal(out["segment_ids"], [[0, 0, 0, 1, 1]])
    mask = tok.tokenize_pairs(tf.constant(firsts), tf.constant(seconds))["padding_mask"].numpy()
    np.testing.assert_array_equal(tok.pair_token_counts(tf.constant(firsts), tf.constant(seconds)), mask.sum(1))


def test_pair_tokenization_runs_in_a_tf_function():
    tok = _ours(16)
    spec = tf.TensorSpec([None], tf.string)
    fn = tf.function(tok.tokenize_pairs, input_signature=[spec, spec])
    out = fn(tf.constant(["a b", "c"]), tf.constant(["d", "e f g"]))
    assert out["token_ids"].shape == (2, 7)


@pytest.mark.large
def test_pair_ids_equal_hf_on_every_stsb_test_pair(data_path):
    pairs = load_stsb(data_path, "test")
    assert len(pairs) == 1379
    for max_length in (64, 32):  # the cross-encoder's length, and one that truncates many pairs
        hf, tok = _hf_tokenizer(max_length), _ours(max_length)
        firsts, seconds = list(pairs.sentences1), list(pairs.sentences2)
        # Both orders: the cross-encoder trains on each pair both ways round.
        bad = _mismatches(tok, hf, firsts + seconds, seconds + firsts)
        full = tok.tokenize_pairs(tf.constant(firsts), tf.constant(seconds))["padding_mask"].numpy().sum(1)
        assert (full == max_length).sum() > 40  # truncation is exercised (47 pairs at 64, 311 at 32)
        # What cross-encoder scoring sorts its batches by: the unpadded length of each pair.
        counts = tok.pair_token_counts(tf.constant(firsts), tf.constant(seconds)).numpy()
        np.testing.assert_array_equal(counts, full)
        assert bad == [], f"{len(bad)} pairs differ at max length {max_length}, e.g. {bad[:2]}"
