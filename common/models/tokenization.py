"""In-graph BERT WordPiece tokenization that matches Hugging Face's BertTokenizer.

The normalisation reproduces `tokenizers.normalizers.BertNormalizer` (clean text,
space around CJK characters, NFD + accent stripping, lower-casing) with plain TF
string ops, then `tensorflow_text.FastBertTokenizer` splits on whitespace and
punctuation and applies WordPiece. Everything is TensorFlow ops, so the tokenizer
runs inside `tf.data`, inside a Keras model and inside an exported SavedModel.

Why not `tensorflow_text`'s own normaliser: its lower-casing applies NFKC case
folding (`´` is dropped, `™` becomes `t ##m`), and keras-hub's BertTokenizer does
not strip accents (`café` -> `[UNK]`); both change token ids for real STS text.
"""

from __future__ import annotations

import dataclasses
from typing import Dict, List, Sequence

import tensorflow as tf
import tensorflow_text as tf_text

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
        ValueError: if a special token is missing or a token is repeated.
    """
    if not tf.io.gfile.exists(path):
        raise FileNotFoundError(f"Vocabulary file not found: {path}")
    with tf.io.gfile.GFile(path, "rb") as f:
        tokens = [line.decode("utf-8", errors="replace").rstrip("\r\n") for line in f]
    while tokens and tokens[-1] == "":
        tokens.pop()
    seen = {}
    for line_no, token in enumerate(tokens, start=1):
        if token in seen:
            raise ValueError(
                f"{path}:{line_no}: token {token!r} repeats line {seen[token]}; "
                "expected one unique token per line."
            )
        seen[token] = line_no
    missing = [t for t in SPECIAL_TOKENS if t not in seen]
    if missing:
        raise ValueError(f"{path}: expected the special tokens {missing} in the vocabulary.")
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
            raise ValueError(f"max_seq_len must be >= 2 ([CLS] and [SEP]), got {config.max_seq_len}.")
        if config.pad_to_multiple_of < 1:
            raise ValueError(f"pad_to_multiple_of must be >= 1, got {config.pad_to_multiple_of}.")
        self.vocabulary = list(vocabulary)
        self.config = config
        index = {token: i for i, token in enumerate(self.vocabulary)}
        self.pad_id = index["[PAD]"]
        self.unk_id = index["[UNK]"]
        self.cls_id = index["[CLS]"]
        self.sep_id = index["[SEP]"]
        self.mask_id = index["[MASK]"]
        self._wordpiece = tf_text.FastBertTokenizer(
            vocab=self.vocabulary,
            token_out_type=tf.int32,
            unknown_token="[UNK]",
            lower_case_nfd_strip_accents=False,
        )

    @property
    def vocabulary_size(self) -> int:
        return len(self.vocabulary)

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
            "segment_ids": tf.zeros_like(token_ids),
        }
