"""In-graph BERT WordPiece tokenization that matches Hugging Face's BertTokenizer.

The normalisation reproduces `tokenizers.normalizers.BertNormalizer` (clean text,
space around CJK characters, NFD + accent stripping, lower-casing) with plain TF
string ops, then `tensorflow_text.FastBertTokenizer` splits on whitespace and
punctuation and applies WordPiece. Everything is TensorFlow ops, so the tokenizer
runs inside `tf.data`, inside a Keras model and inside an exported SavedModel.
Sentence pairs (`BertTokenizer.tokenize_pairs`) are encoded as Hugging Face
encodes them for a cross-encoder: `[CLS] a [SEP] b [SEP]`, segment ids 0/1,
"longest_first" truncation.

Why not `tensorflow_text`'s own normaliser: its lower-casing applies NFKC case
folding (`´` is dropped, `™` becomes `t ##m`), and keras-hub's BertTokenizer does
not strip accents (`café` -> `[UNK]`); both change token ids for real STS text.
"""

from __future__ import annotations

import dataclasses
import json
import weakref
from typing import Any, Callable, Dict, List, Sequence

import tensorflow as tf
import tensorflow_text as tf_text
from absl import logging

from common.errors import UserError

# HF's `is_whitespace`: '\t', '\n', '\r' and Unicode White_Space characters that
# are not control characters (controls are removed before whitespace mapping).
_WHITESPACE = r"[\t\n\r\p{Zs}\x{2028}\x{2029}]"
# HF's `is_control`: Unicode category C* except '\t', '\n', '\r' (already mapped
# to ' ' above), plus NUL and the replacement character U+FFFD.
_CONTROL = r"[\x{0}\x{fffd}\p{Cc}\p{Cf}\p{Co}\p{Cs}]"
# HF's `is_chinese_char` code point blocks (CJK Unified Ideographs and extensions).
_CJK = (
    r"([\x{4E00}-\x{9FFF}\x{3400}-\x{4DBF}\x{20000}-\x{2A6DF}\x{2A700}-\x{2B73F}"
    r"\x{2B740}-\x{2B81F}\x{2B820}-\x{2CEAF}\x{F900}-\x{FAFF}\x{2F800}-\x{2FA1F}])"
)

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def read_vocabulary(path: str) -> List[str]:
    """Reads a WordPiece vocabulary file, one token per line.

    Args:
        path: str. Local or `gs://` path of `vocab.txt`.

    Returns:
        The tokens in id order.

    Raises:
        FileNotFoundError: if the file does not exist.
        UserError: if a special token is missing or a token is repeated.
    """
    if not tf.io.gfile.exists(path):
        raise FileNotFoundError(f"Vocabulary file not found: {path}")
    with tf.io.gfile.GFile(path, "rb") as f:  # read whole: GFile's line iterator takes ~0.09 s for 30k lines
        tokens = [line.decode("utf-8", errors="replace").rstrip("\r") for line in f.read().split(b"\n")]
    while tokens and tokens[-1] == "":
        tokens.pop()
    seen = {}
    for line_no, token in enumerate(tokens, start=1):
        if token in seen:
            raise UserError(
                f"{path}:{line_no}: token {token!r} repeats line {seen[token]}; "
                "expected one unique token per line."
            )
        seen[token] = line_no
    missing = [t for t in SPECIAL_TOKENS if t not in seen]
    if missing:
        raise UserError(f"{path}: expected the special tokens {missing} in the vocabulary.")
    return tokens


def read_wordpiece_tokenizer_json(path: str) -> List[str]:
    """The vocabulary of a `tokenizers` `tokenizer.json` whose model is WordPiece: what a BERT folder
    saved by transformers 5 holds instead of `vocab.txt` (its `model.vocab` maps each token to its id).

    Args:
        path: str. Local or `gs://` path of `tokenizer.json`.

    Returns:
        The tokens in id order.

    Raises:
        UserError: if the model is not WordPiece, the ids have gaps or a special token is missing.
    """
    with tf.io.gfile.GFile(path, "r") as f:
        try:
            model = json.load(f).get("model") or {}
        except json.JSONDecodeError as e:
            raise UserError(f"{path}: not valid JSON ({e}); copy the file from the model's source again.") from None
    if model.get("type") != "WordPiece":
        raise UserError(f"{path}: expected a WordPiece model (BERT's), got model type {model.get('type')!r}; "
                        "give a BERT folder's tokenizer.json or its vocab.txt.")
    vocab = model.get("vocab") or {}
    tokens = sorted(vocab, key=vocab.get)
    if [vocab[t] for t in tokens] != list(range(len(tokens))):
        raise UserError(f"{path}: expected token ids 0..{len(tokens) - 1} without gaps in model.vocab.")
    missing = [t for t in SPECIAL_TOKENS if t not in vocab]
    if missing:
        raise UserError(f"{path}: expected the special tokens {missing} in the vocabulary.")
    return tokens


def bert_normalize(texts: tf.Tensor, lowercase: bool = True) -> tf.Tensor:
    """Normalises strings exactly like HF's `BertNormalizer`.

    Args:
        texts: tf.Tensor. tf.string tensor of any shape (UTF-8; invalid bytes are
            replaced by U+FFFD and then dropped, as HF drops U+FFFD).
        lowercase: bool. Lower-case and strip accents (uncased models). Defaults
            to True.

    Returns:
        A tf.string tensor of the same shape.
    """
    texts = tf.strings.unicode_transcode(
        texts, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD
    )
    texts = tf.strings.regex_replace(texts, _WHITESPACE, " ")
    texts = tf.strings.regex_replace(texts, _CONTROL, "")
    texts = tf.strings.regex_replace(texts, _CJK, r" \1 ")
    if lowercase:
        texts = tf_text.normalize_utf8(texts, "NFD")
        texts = tf.strings.regex_replace(texts, r"\p{Mn}", "")
        texts = tf.strings.lower(texts, encoding="utf-8")
    return texts


@dataclasses.dataclass(frozen=True)
class TokenizerConfig:
    """What a `BertTokenizer` needs besides the vocabulary.

    Attributes:
        max_seq_len: int. Maximum length including [CLS] and [SEP]; longer
            sentences are truncated.
        lowercase: bool. Uncased model: lower-case and strip accents.
        pad_to_multiple_of: int. Round the padded length of a batch up to a
            multiple of this (1 = exactly the longest sentence of the batch).
    """

    max_seq_len: int = 128
    lowercase: bool = True
    pad_to_multiple_of: int = 1


def shared_while_used(cache: weakref.WeakValueDictionary, key, build: Callable[[], Any]) -> Any:
    """`cache[key]`, made by `build()` when no living tokenizer holds one: what every tokenizer of
    one vocabulary can share (a run builds several: its data, its models, its export, each at its
    own length). Made afresh inside a graph, whose tensors belong to that graph."""
    if not tf.executing_eagerly():
        return build()
    value = cache.get(key)
    if value is None:
        value = cache[key] = build()
    return value


# Vocabulary (tuple) -> its word-piece model: building one takes ~0.07 s for BERT's 30,522 pieces.
_WORDPIECES: "weakref.WeakValueDictionary[tuple, tf_text.FastBertTokenizer]" = weakref.WeakValueDictionary()


class BertTokenizer(tf.Module):
    """Raw strings -> padded BERT inputs, dynamically padded per batch.

    Outputs the keras-hub input names: `token_ids`, `padding_mask` and
    `segment_ids` (int32, shape [batch, longest sentence in the batch]).

    Args:
        vocabulary: sequence of str. WordPiece tokens in id order.
        config: TokenizerConfig. Truncation, casing and padding.
    """

    def __init__(self, vocabulary: Sequence[str], config: TokenizerConfig = TokenizerConfig()):
        super().__init__(name="bert_tokenizer")
        if config.max_seq_len < 2:
            raise UserError(f"max_seq_len must be >= 2 ([CLS] and [SEP]), got {config.max_seq_len}.")
        if config.pad_to_multiple_of < 1:
            raise UserError(f"pad_to_multiple_of must be >= 1, got {config.pad_to_multiple_of}.")
        # A tuple: tf.Module would track each entry of a list, ~0.1 s for BERT's 30,522 pieces.
        self._vocabulary = tuple(vocabulary)
        self.config = config
        index = {token: i for i, token in enumerate(self._vocabulary)}
        self.pad_id = index["[PAD]"]
        self.unk_id = index["[UNK]"]
        self.cls_id = index["[CLS]"]
        self.sep_id = index["[SEP]"]
        self.mask_id = index["[MASK]"]
        self._wordpiece = shared_while_used(_WORDPIECES, self._vocabulary, lambda: tf_text.FastBertTokenizer(
            vocab=self._vocabulary, token_out_type=tf.int32, unknown_token="[UNK]", lower_case_nfd_strip_accents=False))

    def with_config(self, config: TokenizerConfig) -> "BertTokenizer":
        """The same vocabulary under another length, padding or casing."""
        return BertTokenizer(self.vocabulary, config)

    @property
    def vocabulary(self) -> List[str]:
        """The tokens in id order."""
        return list(self._vocabulary)

    @property
    def vocabulary_size(self) -> int:
        return len(self._vocabulary)

    def special_token_ids(self) -> Dict[str, int]:
        """Ids of [PAD], [UNK], [CLS], [SEP] and [MASK], read from the vocabulary."""
        return {
            "pad": self.pad_id,
            "unk": self.unk_id,
            "cls": self.cls_id,
            "sep": self.sep_id,
            "mask": self.mask_id,
        }

    def wordpiece_ids(self, texts: tf.Tensor) -> tf.RaggedTensor:
        """Word-piece ids without special tokens or truncation.

        Args:
            texts: tf.Tensor. 1-D tf.string batch.

        Returns:
            int32 RaggedTensor [batch, (pieces)].
        """
        texts = bert_normalize(tf.convert_to_tensor(texts, tf.string), self.config.lowercase)
        return self._wordpiece.tokenize(texts)  # [batch, (pieces)]

    def count_truncated(self, texts: Sequence[str], batch_size: int = 4096) -> int:
        """How many of `texts` are longer than `max_seq_len` tokens ([CLS] and [SEP] counted),
        i.e. lose word pieces when tokenized (a run logs and records the count)."""
        budget = self.config.max_seq_len - 2
        count = 0
        for start in range(0, len(texts), batch_size):
            lengths = self.wordpiece_ids(tf.constant(list(texts[start:start + batch_size]), tf.string)).row_lengths()
            count += int(tf.reduce_sum(tf.cast(lengths > budget, tf.int32)))
        return count

    def count_truncated_pairs(self, texts_a: Sequence[str], texts_b: Sequence[str], batch_size: int = 4096) -> int:
        """How many pairs are longer than `max_seq_len` tokens as `[CLS] a [SEP] b [SEP]`."""
        return count_pairs_over(self, texts_a, texts_b, self.config.max_seq_len - 3, batch_size)

    def token_counts(self, texts: tf.Tensor) -> tf.Tensor:
        """How many tokens `__call__` gives each text before padding ([CLS], truncated pieces, [SEP]).

        Args:
            texts: tf.Tensor. 1-D tf.string batch.

        Returns:
            int32 [batch].
        """
        pieces = tf.cast(self.wordpiece_ids(texts).row_lengths(), tf.int32)
        return tf.minimum(pieces, self.config.max_seq_len - 2) + 2

    def __call__(self, texts: tf.Tensor) -> Dict[str, tf.Tensor]:
        """Tokenizes, truncates, adds [CLS]/[SEP] and pads to the batch's longest.

        Args:
            texts: tf.Tensor. 1-D tf.string batch. Empty strings give `[CLS] [SEP]`.

        Returns:
            Dict with int32 `token_ids`, `padding_mask` (1 = real token) and
            `segment_ids` (zeros), each [batch, length].
        """
        pieces = self.wordpiece_ids(texts)[:, : self.config.max_seq_len - 2]
        batch = pieces.nrows()
        cls = tf.fill([batch, 1], self.cls_id)
        sep = tf.fill([batch, 1], self.sep_id)
        ids = tf.concat([cls, pieces, sep], axis=1)  # [batch, (len)]
        return self._pad(ids, tf.zeros_like(ids))

    def pack_pieces(self, values: tf.Tensor, row_splits: tf.Tensor) -> Dict[str, tf.Tensor]:
        """`__call__`'s truncation, [CLS]/[SEP] and padding, from flat word pieces, with dense ops only.

        TFLite's built-in kernels have no ragged ops (RaggedTensorToTensor, RaggedRange,
        RaggedGather), so the TFLite export packs a batch with gathers and selects instead.
        Tested equal to `__call__` for any batch.

        Args:
            values: tf.Tensor. int32 [pieces]: the word-piece ids of the whole batch, row after row.
            row_splits: tf.Tensor. int [batch + 1]: where each row starts in `values`.

        Returns:
            Dict with int32 `token_ids`, `padding_mask` and `segment_ids`, each [batch, length].
        """
        row_splits = tf.cast(row_splits, tf.int32)
        starts = row_splits[:-1]  # [B]
        kept = tf.minimum(row_splits[1:] - starts, self.config.max_seq_len - 2)  # [B] pieces kept per row
        length = tf.maximum(tf.reduce_max(tf.concat([kept, [0]], 0)) + 2, 2)
        multiple = self.config.pad_to_multiple_of
        length = (length + multiple - 1) // multiple * multiple
        position = tf.expand_dims(tf.range(length), 0)  # [1, T]
        # One [PAD] appended so that an index is valid even when the batch has no pieces at all.
        values = tf.concat([tf.cast(values, tf.int32), [self.pad_id]], 0)
        index = tf.clip_by_value(tf.expand_dims(starts, 1) + position - 1, 0, tf.shape(values)[0] - 1)  # [B, T]
        kept = tf.expand_dims(kept, 1)  # [B, 1]
        pieces = tf.gather(values, index)  # [B, T]
        token_ids = tf.where(position == 0, self.cls_id,
                             tf.where(position <= kept, pieces,
                                      tf.where(position == kept + 1, self.sep_id, self.pad_id)))
        return {
            "token_ids": token_ids,
            "padding_mask": tf.cast(position < kept + 2, tf.int32),
            "segment_ids": tf.zeros_like(token_ids),
        }

    def pair_token_counts(self, texts_a: tf.Tensor, texts_b: tf.Tensor) -> tf.Tensor:
        """How many tokens `tokenize_pairs` gives each pair before padding (int32 [batch]):
        "longest_first" truncation keeps min(pieces, max_seq_len - 3), plus [CLS] and two [SEP]."""
        pieces = self.wordpiece_ids(texts_a).row_lengths() + self.wordpiece_ids(texts_b).row_lengths()
        return tf.minimum(tf.cast(pieces, tf.int32), self.config.max_seq_len - 3) + 3

    def tokenize_pairs(self, texts_a: tf.Tensor, texts_b: tf.Tensor) -> Dict[str, tf.Tensor]:
        """`[CLS] a [SEP] b [SEP]` with segment ids 0 then 1, as Hugging Face encodes a pair.

        Truncation is Hugging Face's "longest_first" (the `tokenizers` library's
        formula, see `longest_first_lengths`) to `max_seq_len` tokens in all.

        Args:
            texts_a: tf.Tensor. 1-D tf.string batch of first sentences.
            texts_b: tf.Tensor. 1-D tf.string batch of second sentences, same length.

        Returns:
            Dict with int32 `token_ids`, `padding_mask` and `segment_ids`, each
            [batch, length], padded to the batch's longest pair.
        """
        a = self.wordpiece_ids(texts_a)  # [batch, (pieces_a)]
        b = self.wordpiece_ids(texts_b)  # [batch, (pieces_b)]
        keep_a, keep_b = longest_first_lengths(a.row_lengths(), b.row_lengths(), self.config.max_seq_len - 3)
        a = _keep_first(a, keep_a)
        b = _keep_first(b, keep_b)
        ids, segments = tf_text.combine_segments([a, b], self.cls_id, self.sep_id)  # [batch, (len)]
        return self._pad(ids, tf.cast(segments, tf.int32))

    def _pad(self, ids: tf.RaggedTensor, segments: tf.RaggedTensor) -> Dict[str, tf.Tensor]:
        """Pads ragged ids and segment ids to the batch's longest row (rounded up to
        `pad_to_multiple_of`)."""
        length = tf.cast(tf.reduce_max(ids.row_lengths()), tf.int32)
        length = tf.maximum(length, 2)  # an empty batch still has a valid shape
        multiple = self.config.pad_to_multiple_of
        length = (length + multiple - 1) // multiple * multiple
        extra = [[0, 0], [0, length - tf.shape(ids.to_tensor())[1]]]
        token_ids = tf.pad(ids.to_tensor(default_value=self.pad_id), extra, constant_values=self.pad_id)
        mask = tf.pad(tf.ones_like(ids).to_tensor(default_value=0), extra)  # [batch, length]
        return {
            "token_ids": token_ids,
            "padding_mask": mask,
            "segment_ids": tf.pad(segments.to_tensor(default_value=0), extra),
        }


def count_pairs_over(tokenizer, texts_a: Sequence[str], texts_b: Sequence[str], budget: int,
                     batch_size: int = 4096) -> int:
    """How many pairs have more than `budget` pieces together (the length left after a tokenizer's
    special tokens), counted in batches with the tokenizer's `wordpiece_ids`."""
    count = 0
    for start in range(0, len(texts_a), batch_size):
        a = tokenizer.wordpiece_ids(tf.constant(list(texts_a[start:start + batch_size]), tf.string)).row_lengths()
        b = tokenizer.wordpiece_ids(tf.constant(list(texts_b[start:start + batch_size]), tf.string)).row_lengths()
        count += int(tf.reduce_sum(tf.cast(a + b > budget, tf.int32)))
    return count


def truncated_sentences(tokenizer: BertTokenizer, *columns: Sequence[str]) -> int:
    """Counts (and logs) the training sentences that `tokenizer` truncates, over every column;
    a run records the count with its data statistics."""
    count = sum(tokenizer.count_truncated(column) for column in columns)
    total = sum(len(column) for column in columns)
    if count:
        logging.info("%d of %d training sentences are longer than --max_seq_len=%d tokens and are truncated.",
                     count, total, tokenizer.config.max_seq_len)
    return count


def longest_first_lengths(len_a: tf.Tensor, len_b: tf.Tensor, budget: int):
    """How many word pieces of each sentence a pair keeps under "longest_first" truncation.

    This is the `tokenizers` library's closed form (`truncate_encodings`,
    `TruncationStrategy::LongestFirst`), not the older Python loop that removed
    one token at a time: a pair that fits is kept whole; otherwise, when the
    shorter sentence fits in half the budget it is kept and the longer one gets
    the rest, else each gets half, the odd token going to the longer sentence
    (to the second one on a tie).

    Args:
        len_a: tf.Tensor. int [batch] lengths of the first sentences.
        len_b: tf.Tensor. int [batch] lengths of the second sentences.
        budget: int. Pieces allowed for both together (max length minus the 3
            special tokens).

    Returns:
        (keep_a, keep_b): int64 [batch] each.
    """
    len_a = tf.cast(len_a, tf.int64)
    len_b = tf.cast(len_b, tf.int64)
    budget = tf.constant(max(budget, 0), tf.int64)
    short = tf.minimum(len_a, len_b)  # [batch]
    half = budget // 2
    both_cut = short > half
    keep_short = tf.where(both_cut, half, short)
    keep_long = tf.where(both_cut, half + budget % 2, budget - short)
    a_is_long = len_a > len_b
    fits = len_a + len_b <= budget
    keep_a = tf.where(fits, len_a, tf.where(a_is_long, keep_long, keep_short))
    keep_b = tf.where(fits, len_b, tf.where(a_is_long, keep_short, keep_long))
    return keep_a, keep_b


def _keep_first(pieces: tf.RaggedTensor, keep: tf.Tensor) -> tf.RaggedTensor:
    """The first `keep[i]` items of each row i of a [batch, (pieces)] ragged tensor.

    One mask over the flat values (each value's position in its row against its row's
    `keep`): a third fewer ops to trace than `tf.ragged.boolean_mask` over a ragged range,
    which pair tokenization paid in every graph it was built into."""
    rowids = pieces.value_rowids()
    positions = tf.range(tf.shape(pieces.values, out_type=tf.int64)[0]) - tf.gather(pieces.row_starts(), rowids)
    kept = positions < tf.gather(tf.cast(keep, tf.int64), rowids)
    return tf.RaggedTensor.from_value_rowids(tf.boolean_mask(pieces.values, kept), tf.boolean_mask(rowids, kept),
                                             nrows=pieces.nrows())
