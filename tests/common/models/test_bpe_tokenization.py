"""The in-graph byte-level BPE tokenizer against Hugging Face `tokenizers`, id for id."""

import itertools

import numpy as np
import pytest
import tensorflow as tf

from common.models.bpe_tokenization import (ByteLevelBpeTokenizer, bytes_to_unicode, pre_tokenize, read_bpe_files,
                                            read_tokenizer_json)
from common.models.tokenization import TokenizerConfig
from fixtures import write_bpe_tokenizer_files

PIECES = ["", "a", "hello", "Hello", "world", "Café", "naïve", "résumé", "Ünïcödé", "😀", "🎉🎉", "👩‍👩‍👧",
          "你好世界", "東京タワー", "한국어", "ｆｕｌｌ", "don't", "IT'S", "we're", "I'll", "they've", "x'y", "'s",
          "''", "12345", "3.14", "1,000", "...", "!!!", "?!", "foo-bar_baz", "(parens)", "[x]", "’curly’",
          "«guillemets»", "supercalifragilisticexpialidocious" * 4, "a" * 300, "६", "<mask>", "\u00e9\u0301",
          "Ω≈ç√"]
SPACES = ["", " ", "  ", "   ", "\t", "\n", "\n\n", " \n ", "\u00a0", "\u3000", "\u2009", "\r\n", "\u000b",
          "\u0085"]


def _strings():
    strings = list(PIECES)
    for a, s, b in itertools.product(PIECES[:20], SPACES, PIECES[10:30]):
        strings.append(f"{a}{s}{b}")
    for s in SPACES:
        strings += [s, f"{s}lead", f"trail{s}", f"{s}{s}x{s}{s}"]
    strings += ["The quick brown fox jumps over the lazy dog.", "  two leading", "a  b   c    d     e",
                "mixed 😀text and\ttabs\nnewlines   end   "]
    return strings


@pytest.fixture(scope="module")
def bpe_files(tmp_path_factory):
    return write_bpe_tokenizer_files(str(tmp_path_factory.mktemp("bpe")))


def _hf(path, max_length=None):
    from tokenizers import Tokenizer, models, pre_tokenizers, processors

    tok = Tokenizer(models.BPE.from_file(f"{path}/vocab.json", f"{path}/merges.txt"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0))
    if max_length:
        tok.enable_truncation(max_length=max_length)
    return tok


def _tokenizer(path, max_seq_len=512):
    return ByteLevelBpeTokenizer(*read_bpe_files(f"{path}/vocab.json", f"{path}/merges.txt"),
                                 TokenizerConfig(max_seq_len=max_seq_len, lowercase=False))


def _rows(batch):
    return [list(ids[mask == 1]) for ids, mask in zip(batch["token_ids"].numpy(), batch["padding_mask"].numpy())]


def test_ids_equal_hugging_face_tokenizers(bpe_files):
    strings = _strings()
    hf, tokenizer = _hf(bpe_files), _tokenizer(bpe_files)
    got = _rows(tokenizer(tf.constant(strings)))
    mismatches = [s for s, g in zip(strings, got) if hf.encode(s).ids != g]
    print(f"byte-level BPE parity: {len(strings)} strings, {len(mismatches)} mismatches")
    assert len(strings) > 5000 and mismatches == []


def test_pre_tokenization_equals_hugging_face():
    """The words before BPE (HF shows them byte-mapped), including whitespace runs' split."""
    from tokenizers import pre_tokenizers

    hf = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    strings = _strings()
    table = bytes_to_unicode()
    got = [["".join(table[b] for b in word) for word in row] for row in pre_tokenize(tf.constant(strings)).to_list()]
    assert got == [[w for w, _ in hf.pre_tokenize_str(s)] for s in strings]


@pytest.mark.parametrize("max_seq_len", [2, 3, 5, 9])
def test_truncation_equals_hugging_face(bpe_files, max_seq_len):
    strings = _strings()[:400]
    hf, tokenizer = _hf(bpe_files, max_seq_len), _tokenizer(bpe_files, max_seq_len)
    assert _rows(tokenizer(tf.constant(strings))) == [hf.encode(s).ids for s in strings]
    counts = tokenizer.token_counts(tf.constant(strings)).numpy()
    assert list(counts) == [len(hf.encode(s).ids) for s in strings]


@pytest.mark.parametrize("max_seq_len", [6, 11, 512])
def test_pairs_equal_hugging_face(bpe_files, max_seq_len):
    strings = _strings()[:300]
    a, b = strings, strings[::-1]
    hf, tokenizer = _hf(bpe_files, max_seq_len), _tokenizer(bpe_files, max_seq_len)
    batch = tokenizer.tokenize_pairs(tf.constant(a), tf.constant(b))
    want = [hf.encode(x, y) for x, y in zip(a, b)]
    assert _rows(batch) == [e.ids for e in want]
    assert not np.any(batch["segment_ids"].numpy())
    assert list(tokenizer.pair_token_counts(tf.constant(a), tf.constant(b)).numpy()) == [len(e.ids) for e in want]
    assert tokenizer.count_truncated_pairs(a, b) == sum(len(x.ids) + len(y.ids) + 4 > max_seq_len
                                                        for x, y in zip((hf.encode(s, add_special_tokens=False)
                                                                         for s in a),
                                                                        (hf.encode(s, add_special_tokens=False)
                                                                         for s in b)))


def test_tokenizer_json_reads_the_same_vocabulary_and_merges(bpe_files, tmp_path):
    _hf(bpe_files).save(str(tmp_path / "tokenizer.json"))
    assert read_tokenizer_json(str(tmp_path / "tokenizer.json")) == read_bpe_files(f"{bpe_files}/vocab.json",
                                                                                   f"{bpe_files}/merges.txt")


def test_runs_inside_a_saved_model(bpe_files, tmp_path):
    tokenizer = _tokenizer(bpe_files, 16)
    module = tf.Module()
    module.tokenizer = tokenizer
    module.f = tf.function(lambda t: tokenizer(t)["token_ids"], input_signature=[tf.TensorSpec([None], tf.string)])
    tf.saved_model.save(module, str(tmp_path / "sm"))
    loaded = tf.saved_model.load(str(tmp_path / "sm"))
    texts = tf.constant(["Café  😀 don't", "", "a  b"])
    np.testing.assert_array_equal(loaded.f(texts).numpy(), tokenizer(texts)["token_ids"].numpy())


def test_tokenizers_of_one_vocabulary_share_one_tokenization_traced_once(bpe_files):
    """A run builds several tokenizers of one vocabulary (data, models, export, each at its own
    length): they share the tables and the traced BPE, so each graph that tokenizes calls it
    rather than rebuilding thousands of ops; a different length still truncates differently."""
    short = _tokenizer(bpe_files, 6)
    long = short.with_config(TokenizerConfig(max_seq_len=64, lowercase=False))
    again = _tokenizer(bpe_files, 64)
    assert short._core is long._core is again._core
    texts = tf.constant(["hello world, Café naïve 😀", "a"])
    before = short._core.wordpiece_ids.experimental_get_tracing_count()
    for tokenizer in (short, long, again):
        tf.function(tokenizer.__call__)(texts)
        tf.function(tokenizer.__call__)(texts)  # a new graph each time: the tokenization is not retraced
    assert short._core.wordpiece_ids.experimental_get_tracing_count() - before <= 1
    assert _rows(short(texts))[0] == _rows(long(texts))[0][:5] + [long.sep_id]
    other = write_bpe_tokenizer_files(str(bpe_files) + "-other", vocab_size=280)
    assert _tokenizer(other)._core is not short._core


def test_bad_files_are_clear_errors(bpe_files, tmp_path):
    (tmp_path / "merges.txt").write_text("#version: 0.2\nab\n")
    with pytest.raises(ValueError, match="expected two symbols"):
        read_bpe_files(f"{bpe_files}/vocab.json", str(tmp_path / "merges.txt"))
    (tmp_path / "vocab.json").write_text('{"a": 0, "b": 1}')
    with pytest.raises(ValueError, match="special tokens"):
        read_bpe_files(str(tmp_path / "vocab.json"), f"{bpe_files}/merges.txt")
    with pytest.raises(FileNotFoundError, match="merges.txt"):
        read_bpe_files(f"{bpe_files}/vocab.json", str(tmp_path / "missing" / "merges.txt"))
