"""In-graph byte-level BPE (GPT-2 / RoBERTa) tokenization that matches Hugging Face `tokenizers`.

Written here rather than taken from keras-hub: keras-hub 0.32's `BytePairTokenizer`
approximates GPT-2's pre-tokenization regex (whose `\\s+(?!\\S)` needs a look-ahead that
RE2 lacks) by inserting the character "६" into the text, which splits whitespace runs
differently from Hugging Face (`"  a"` gives `["  ", "a"]` where `tokenizers` gives
`[" ", " a"]`) and turns a real "६" in the text into nothing; and when the `tokenizers`
package is importable it tokenizes in Python, outside the graph, so an exported
SavedModel would not keep it.

Pre-tokenization reproduces `tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)`
with TF ops and no marker character: the text is split into whitespace runs and the rest;
the last whitespace character of a run that is followed by text moves to the start of
that text (what the look-ahead does); then each piece is split by GPT-2's pattern without
the look-ahead (`\\s` written as Unicode White_Space, as Oniguruma reads it, where RE2's
`\\s` is ASCII only). Each word's UTF-8 bytes are mapped to GPT-2's printable characters
and merged by BPE: repeatedly the adjacent pair of lowest merge rank, leftmost first, as
`tokenizers`' BPE model does. Ids come from `vocab.json`.

RoBERTa frames a sentence as `<s> a </s>` and a pair as `<s> a </s></s> b </s>`, all
segment ids 0 (`tokenizers.processors.RobertaProcessing`). Special tokens written inside
the text (a literal "<mask>") are tokenized as text, not as the special token.
"""

from __future__ import annotations

import json
import weakref
from typing import Dict, List, Sequence, Tuple

import tensorflow as tf
import tensorflow_text as tf_text

from common.errors import UserError
from common.models.tokenization import (BertTokenizer, TokenizerConfig, _keep_first, count_pairs_over,
                                        longest_first_lengths, shared_while_used)

# Unicode White_Space (Oniguruma's `\s`): the ASCII controls \t \n \v \f \r, U+0085 and the
# separators (Zs, Zl, Zp).
_WS = r"\t\n\x{0b}\f\r\x{85}\p{Z}"
_WS_RUN = rf"[{_WS}]+"
# GPT-2's pattern less its `\s+(?!\S)` alternative, which the run split above stands in for.
_GPT2_PIECES = (rf"'s|'t|'re|'ve|'m|'ll|'d| ?\p{{L}}+| ?\p{{N}}+| ?[^{_WS}\p{{L}}\p{{N}}]+|[{_WS}]+")

ROBERTA_SPECIAL_TOKENS = {"cls": "<s>", "pad": "<pad>", "sep": "</s>", "unk": "<unk>", "mask": "<mask>"}
# Sentinel rank of a pair that is not a merge (ranks are < the number of merges).
_NO_MERGE = 2**31 - 1


def bytes_to_unicode() -> Dict[int, str]:
    """GPT-2's map from each byte to a printable character: printable Latin-1 bytes map to
    themselves, the other 68 to U+0100 onwards in byte order."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    table, extra = {}, 0
    for b in range(256):
        if b in keep:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


def read_bpe_files(vocab_path: str, merges_path: str) -> Tuple[List[str], List[str]]:
    """Reads `vocab.json` and `merges.txt`.

    Returns:
        (tokens in id order, merges as "left right" strings in rank order).

    Raises:
        FileNotFoundError: if a file is missing.
        ValueError: if the vocabulary's ids are not 0..n-1 or a merge line is not two symbols.
    """
    for path in (vocab_path, merges_path):
        if not tf.io.gfile.exists(path):
            raise FileNotFoundError(f"{path}: no such file; a byte-level BPE tokenizer needs vocab.json and "
                                    "merges.txt (or a tokenizer.json).")
    with tf.io.gfile.GFile(vocab_path, "r") as f:
        vocab = json.load(f)
    with tf.io.gfile.GFile(merges_path, "rb") as f:
        lines = f.read().decode("utf-8").split("\n")
    merges = [line.rstrip("\r") for line in lines if line.strip() and not line.startswith("#version")]
    return _ordered_vocabulary(vocab, vocab_path), _checked_merges(merges, merges_path)


def read_tokenizer_json(path: str) -> Tuple[List[str], List[str]]:
    """The vocabulary and merges of a `tokenizers` `tokenizer.json` whose model is BPE.

    Raises:
        ValueError: if the model is not BPE.
    """
    with tf.io.gfile.GFile(path, "r") as f:
        model = json.load(f).get("model", {})
    if model.get("type") != "BPE":
        raise UserError(f"{path}: expected a BPE model (byte-level BPE, as RoBERTa's), got model type "
                         f"{model.get('type')!r}; give a RoBERTa tokenizer.json or vocab.json and merges.txt.")
    # Newer `tokenizers` write each merge as a [left, right] pair, older ones as "left right".
    merges = [m if isinstance(m, str) else " ".join(m) for m in model.get("merges", [])]
    return _ordered_vocabulary(model.get("vocab", {}), path), _checked_merges(merges, path)


def _ordered_vocabulary(vocab: Dict[str, int], source: str) -> List[str]:
    tokens = sorted(vocab, key=vocab.get)
    if [vocab[t] for t in tokens] != list(range(len(tokens))):
        raise UserError(f"{source}: expected token ids 0..{len(tokens) - 1} without gaps; got ids "
                         f"{min(vocab.values(), default=None)}..{max(vocab.values(), default=None)} for "
                         f"{len(tokens)} tokens.")
    missing = [t for t in ROBERTA_SPECIAL_TOKENS.values() if t not in vocab]
    if missing:
        raise UserError(f"{source}: expected RoBERTa's special tokens {missing} in the vocabulary.")
    return tokens


def _checked_merges(merges: List[str], source: str) -> List[str]:
    for i, merge in enumerate(merges):
        if len(merge.split(" ")) != 2:
            raise UserError(f"{source}: merge {i} is {merge!r}; expected two symbols separated by one space.")
    if not merges:
        raise UserError(f"{source}: no BPE merges found; expected merges.txt lines (or tokenizer.json "
                         "model.merges) as 'left right'.")
    return merges


def pre_tokenize(texts: tf.Tensor) -> tf.RaggedTensor:
    """GPT-2's pre-tokenization (`tokenizers`' ByteLevel, no prefix space) of a 1-D string batch.

    Returns:
        tf.string RaggedTensor [batch, (words)].
    """
    runs = tf_text.regex_split(texts, _WS_RUN, _WS_RUN)  # [B, (runs)]: text and whitespace runs alternate
    flat = runs.flat_values  # [R]
    position = tf.ragged.range(runs.row_lengths()).flat_values  # [R]
    row_length = tf.repeat(runs.row_lengths(), runs.row_lengths())  # [R]
    is_ws = tf.strings.regex_full_match(flat, _WS_RUN)
    # A whitespace run followed by text gives its last character to that text (GPT-2's `\s+(?!\S)`).
    moves = is_ws & (position < row_length - 1)  # [R]
    chars = tf.strings.unicode_split(flat, "UTF-8")  # [R, (chars)]
    last = tf.gather(chars.flat_values, tf.maximum(chars.row_splits[1:] - 1, 0))  # [R]
    head = tf.where(moves, tf.strings.reduce_join(chars[:, :-1], axis=1), flat)  # [R]
    given = tf.concat([[""], tf.where(moves, last, "")[:-1]], 0)  # [R]: what the run before gives
    pieces = runs.with_flat_values(given + head)  # [B, (runs)]
    words = tf_text.regex_split(pieces, _GPT2_PIECES, _GPT2_PIECES).merge_dims(1, 2)  # [B, (words)]
    return tf.ragged.boolean_mask(words, tf.strings.length(words) > 0)


class ByteLevelBpeTokenizer(BertTokenizer):
    """Raw strings -> padded RoBERTa inputs: `<s> pieces </s>`, dynamically padded per batch.

    The same interface and outputs as `BertTokenizer` (`token_ids`, `padding_mask`,
    `segment_ids`; `cls_id` is `<s>`, `sep_id` `</s>`), so encoders and methods use either.

    Args:
        vocabulary: sequence of str. Byte-level BPE tokens in id order (`vocab.json`).
        merges: sequence of str. "left right" merges in rank order (`merges.txt`).
        config: TokenizerConfig. Truncation and padding; `lowercase` must be False
            (byte-level BPE keeps case).
    """

    # <s> and </s> around one sentence; <s> a </s></s> b </s> around a pair.
    PAIR_SPECIAL_TOKENS = 4

    def __init__(self, vocabulary: Sequence[str], merges: Sequence[str],
                 config: TokenizerConfig = TokenizerConfig(lowercase=False)):
        tf.Module.__init__(self, name="byte_level_bpe_tokenizer")
        if config.max_seq_len < 2:
            raise UserError(f"max_seq_len must be >= 2 (<s> and </s>), got {config.max_seq_len}.")
        if config.pad_to_multiple_of < 1:
            raise UserError(f"pad_to_multiple_of must be >= 1, got {config.pad_to_multiple_of}.")
        if config.lowercase:
            raise ValueError("A byte-level BPE tokenizer keeps case; expected TokenizerConfig(lowercase=False).")
        # Tuples: tf.Module would track each entry of a list (RoBERTa has 50,265 tokens and 50,000 merges).
        self._vocabulary = tuple(vocabulary)
        self._merges = tuple(merges)
        self.config = config
        index = {token: i for i, token in enumerate(self._vocabulary)}
        for role, token in ROBERTA_SPECIAL_TOKENS.items():
            setattr(self, f"{role}_id", index[token])
        self._core = shared_while_used(_CORES, (self._vocabulary, self._merges, self.unk_id),
                                       lambda: _BpeCore(self._vocabulary, self._merges, self.unk_id))

    @property
    def merges(self) -> List[str]:
        """The "left right" merges in rank order."""
        return list(self._merges)

    def with_config(self, config: TokenizerConfig) -> "ByteLevelBpeTokenizer":
        """The same vocabulary and merges under another length or padding."""
        return ByteLevelBpeTokenizer(self._vocabulary, self._merges, config)

    @property
    def lookup_tables(self) -> List[tf.lookup.StaticHashTable]:
        """The tokenizer's hash tables (token ids, merge ranks, byte map): what a SavedModel that
        calls it must track."""
        return self._core.lookup_tables

    def wordpiece_ids(self, texts: tf.Tensor) -> tf.RaggedTensor:
        """BPE ids without special tokens or truncation (the name `BertTokenizer`'s callers use).

        Args:
            texts: tf.Tensor. 1-D tf.string batch.

        Returns:
            int32 RaggedTensor [batch, (pieces)].
        """
        return self._core.wordpiece_ids(tf.convert_to_tensor(texts, tf.string))

    def count_truncated_pairs(self, texts_a: Sequence[str], texts_b: Sequence[str], batch_size: int = 4096) -> int:
        """How many pairs are longer than `max_seq_len` tokens as `<s> a </s></s> b </s>`."""
        return count_pairs_over(self, texts_a, texts_b, self.config.max_seq_len - self.PAIR_SPECIAL_TOKENS,
                                batch_size)

    def pair_token_counts(self, texts_a: tf.Tensor, texts_b: tf.Tensor) -> tf.Tensor:
        """How many tokens `tokenize_pairs` gives each pair before padding (int32 [batch])."""
        pieces = self.wordpiece_ids(texts_a).row_lengths() + self.wordpiece_ids(texts_b).row_lengths()
        budget = self.config.max_seq_len - self.PAIR_SPECIAL_TOKENS
        return tf.minimum(tf.cast(pieces, tf.int32), budget) + self.PAIR_SPECIAL_TOKENS

    def tokenize_pairs(self, texts_a: tf.Tensor, texts_b: tf.Tensor) -> Dict[str, tf.Tensor]:
        """`<s> a </s></s> b </s>` with segment ids all 0, as Hugging Face encodes a RoBERTa pair,
        "longest_first" truncated to `max_seq_len` tokens in all."""
        a = self.wordpiece_ids(texts_a)  # [batch, (pieces_a)]
        b = self.wordpiece_ids(texts_b)  # [batch, (pieces_b)]
        budget = self.config.max_seq_len - self.PAIR_SPECIAL_TOKENS
        keep_a, keep_b = longest_first_lengths(a.row_lengths(), b.row_lengths(), budget)
        a, b = _keep_first(a, keep_a), _keep_first(b, keep_b)
        batch = a.nrows()
        cls = tf.fill([batch, 1], self.cls_id)
        sep = tf.fill([batch, 1], self.sep_id)
        ids = tf.concat([cls, a, sep, sep, b, sep], axis=1)  # [batch, (len)]
        return self._pad(ids, tf.zeros_like(ids))


# (vocabulary, merges, unk id) -> their tables and traced tokenization.
_CORES: "weakref.WeakValueDictionary[tuple, _BpeCore]" = weakref.WeakValueDictionary()


class _BpeCore(tf.Module):
    """Byte-level BPE of one vocabulary: its hash tables and `wordpiece_ids`, one `tf.function`
    traced once, so that a graph that tokenizes (a dataset's map, a training step, each
    signature of an export) calls it instead of rebuilding its ~2,800 ops."""

    def __init__(self, vocabulary: Tuple[str, ...], merges: Tuple[str, ...], unk_id: int):
        super().__init__(name="byte_level_bpe")
        self._token_ids = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(tf.constant(vocabulary), tf.range(len(vocabulary))),
            default_value=unk_id)
        self._merge_ranks = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(tf.constant(merges), tf.range(len(merges))),
            default_value=_NO_MERGE)
        table = bytes_to_unicode()
        self._byte_chars = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(tf.constant([bytes([b]) for b in range(256)]),
                                                tf.constant([table[b] for b in range(256)])),
            default_value="")
        self.wordpiece_ids = tf.function(self._wordpiece_ids, input_signature=[tf.TensorSpec([None], tf.string)],
                                         autograph=False)

    @property
    def lookup_tables(self) -> List[tf.lookup.StaticHashTable]:
        return [self._token_ids, self._merge_ranks, self._byte_chars]

    def _merge(self, symbols: tf.RaggedTensor) -> tf.RaggedTensor:
        """BPE on each row of `symbols` [words, (symbols)]: merges the lowest-ranked adjacent pair,
        leftmost on ties, one per word and step, until no pair is a merge."""

        def body(values, splits, _):
            s = tf.RaggedTensor.from_row_splits(values, splits)  # [W, (S)]
            pairs = (s[:, :-1] + " " + s[:, 1:])  # [W, (S - 1)]
            ranks = self._merge_ranks.lookup(pairs.flat_values)  # [P]
            pair_row = pairs.value_rowids()  # [P]
            pair_at = tf.ragged.range(pairs.row_lengths()).flat_values  # [P]
            words = s.nrows()
            best = tf.math.unsorted_segment_min(ranks, pair_row, words)  # [W]; no pair: int32 max
            hit = tf.equal(ranks, tf.gather(best, pair_row)) & tf.less(ranks, _NO_MERGE)
            first = tf.math.unsorted_segment_min(tf.where(hit, pair_at, tf.int64.max), pair_row, words)  # [W]
            at = tf.ragged.range(s.row_lengths()).flat_values  # [N]
            first = tf.gather(first, s.value_rowids())  # [N]
            is_left, is_right = tf.equal(at, first), tf.equal(at, first + 1)  # [N]
            merged = tf.where(is_left, values + tf.concat([values[1:], [""]], 0), values)
            s = tf.ragged.boolean_mask(s.with_flat_values(merged), s.with_flat_values(tf.logical_not(is_right)))
            return s.flat_values, s.row_splits, tf.reduce_any(is_left)

        values, splits, _ = tf.while_loop(
            lambda values, splits, changed: changed, body,
            (symbols.flat_values, symbols.row_splits, tf.constant(True)),
            shape_invariants=(tf.TensorShape([None]), tf.TensorShape([None]), tf.TensorShape([])))
        return tf.RaggedTensor.from_row_splits(values, splits)

    def _wordpiece_ids(self, texts: tf.Tensor) -> tf.RaggedTensor:
        words = pre_tokenize(texts)  # [B, (words)]
        byte_strings = tf.strings.bytes_split(words.flat_values)  # [W, (bytes)]
        symbols = tf.ragged.map_flat_values(self._byte_chars.lookup, byte_strings)  # [W, (bytes)]
        pieces = self._merge(symbols)  # [W, (pieces)]
        ids = tf.ragged.map_flat_values(self._token_ids.lookup, pieces)  # [W, (pieces)]
        ids = tf.RaggedTensor.from_row_splits(ids, words.row_splits).merge_dims(1, 2)  # [B, (pieces)]
        return tf.cast(ids, tf.int32)
