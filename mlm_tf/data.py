"""Documents grouped into books, a whole-book held-out split, and packing into windows."""

from __future__ import annotations

import dataclasses
import json
import posixpath
from typing import List, Sequence, Tuple

import numpy as np
import tensorflow as tf
from absl import logging

from common.data.documents import AUTO, PER_FILE, read_document_files
from common.errors import UserError

MANIFEST = "manifest.json"


@dataclasses.dataclass
class Books:
    """Documents grouped by the book they come from.

    Attributes:
        documents: list of list of str. documents[b] are book b's documents, in order.
        titles: list of str. A name per book.
    """

    documents: List[List[str]]
    titles: List[str]


def read_books(paths: Sequence[str], layout: str = AUTO) -> Books:
    """Reads documents (`common.data.documents`: one per line of a file, or one per file of a
    directory; `layout` chooses), grouped into books.

    A `manifest.json` beside a file of one document per line (as `documents/gutenberg/` has)
    gives each book's number of documents, in file order; without one, every document is its
    own "book". A document that is a whole file is its own book.

    Raises:
        UserError: when a manifest's document counts do not add up to the file's lines.
    """
    documents, titles, unlisted = [], [], []
    for file in read_document_files(paths, layout):
        lines = file.documents
        manifest = posixpath.join(posixpath.dirname(file.path), MANIFEST)
        if file.layout == PER_FILE:
            documents.extend([d] for d in lines)
            titles.extend(file.name for _ in lines)
        elif tf.io.gfile.exists(manifest):
            with tf.io.gfile.GFile(manifest) as f:
                books = json.load(f)["books"]
            counts = [int(b["documents"]) for b in books]
            if sum(counts) != len(lines):
                raise UserError(f"{manifest}: its books have {sum(counts)} documents, but {file.path} has "
                                f"{len(lines)} non-empty lines; expected one document per line, books in manifest "
                                "order.")
            start = 0
            for book, count in zip(books, counts):
                documents.append(lines[start:start + count])
                titles.append(str(book.get("title", book.get("ebook", len(titles)))))
                start += count
        else:
            unlisted.append(file.path)
            documents.extend([line] for line in lines)
            titles.extend(f"{file.name}:{i + 1}" for i in range(len(lines)))
    if unlisted:
        shown = ", ".join(unlisted[:3]) + (f" and {len(unlisted) - 3} more" if len(unlisted) > 3 else "")
        logging.warning("%s: no %s beside %s; each document is held out (or not) on its own.", shown, MANIFEST,
                        "it" if len(unlisted) == 1 else "them")
    if not documents:
        raise UserError(f"No documents in {list(paths)}; expected text files (one document per line, or per file "
                        "of a directory).")
    return Books(documents, titles)


def split_books(books: Books, heldout: int, seed: int) -> Tuple[List[str], List[str], List[str]]:
    """A seeded whole-book split: (training documents, held-out documents, held-out titles).

    Raises:
        UserError: when fewer than heldout + 1 books exist.
    """
    if heldout >= len(books.documents):
        raise UserError(f"--heldout_books={heldout} leaves no training book ({len(books.documents)} books).")
    chosen = set(np.random.default_rng(seed).choice(len(books.documents), size=heldout, replace=False).tolist())
    train = [d for b, docs in enumerate(books.documents) if b not in chosen for d in docs]
    held = [d for b, docs in enumerate(books.documents) if b in chosen for d in docs]
    return train, held, [books.titles[b] for b in sorted(chosen)]


def pack_windows(pieces: Sequence[np.ndarray], window: int, cls_id: int, sep_id: int,
                 pad_id: int) -> Tuple[np.ndarray, np.ndarray]:
    """Packs documents' word pieces into `[CLS] ... [SEP]` windows of `window` tokens.

    The documents are concatenated with a [SEP] between each two, then cut into chunks of
    `window - 2` tokens: a window that spans two documents has the [SEP] between them,
    and no token is dropped (the last window is padded).

    Args:
        pieces: sequence of int arrays. Each document's word-piece ids (no special tokens).
        window: int. Window length, [CLS] and the final [SEP] included.
        cls_id, sep_id, pad_id: int. Special token ids (from the vocabulary).

    Returns:
        (token_ids int32 [N, window], padding_mask int32 [N, window]).
    """
    if window < 3:
        raise UserError(f"Windows need room for [CLS], a token and [SEP]; got --max_seq_len={window}.")
    parts = []
    for i, p in enumerate(pieces):
        if i:
            parts.append(np.asarray([sep_id], np.int32))
        parts.append(np.asarray(p, np.int32))
    stream = np.concatenate(parts) if parts else np.zeros([0], np.int32)
    if not len(stream):
        raise UserError("No tokens to pack.")
    body = window - 2
    n = -(-len(stream) // body)
    chunks = np.full([n * body], pad_id, np.int32)
    chunks[:len(stream)] = stream
    chunks = chunks.reshape(n, body)
    lengths = np.minimum(body, len(stream) - body * np.arange(n))  # real tokens per chunk
    ids = np.full([n, window], pad_id, np.int32)
    ids[:, 0] = cls_id
    ids[:, 1:window - 1] = chunks
    ids[np.arange(n), lengths + 1] = sep_id
    mask = (np.arange(window)[None, :] < (lengths + 2)[:, None]).astype(np.int32)
    return ids, mask


def wordpieces(tokenizer, documents: Sequence[str], chunk: int = 64) -> List[np.ndarray]:
    """Each document's word-piece ids (no truncation), tokenized in the graph in chunks."""
    out: List[np.ndarray] = []
    for start in range(0, len(documents), chunk):
        ragged = tokenizer.wordpiece_ids(tf.constant(list(documents[start:start + chunk])))
        out.extend(np.asarray(row, np.int32) for row in ragged.numpy())
    return out


def unigram_baseline(ids: np.ndarray, mask: np.ndarray, labels: np.ndarray, weights: np.ndarray,
                     special_ids: Sequence[int], vocab_size: int) -> dict:
    """The unigram-frequency predictor's masked-LM loss and accuracy on given masks.

    It predicts every masked token from the training tokens' frequencies (add-one smoothed,
    special tokens excluded): the plateau a masked-LM sits on before it uses any context.

    Args:
        ids, mask: int arrays [N, T]. Training windows and their real-token mask.
        labels, weights: arrays [M, T]. Held-out original ids and 1.0 where a token was selected.
        special_ids: sequence of int. Never counted ([CLS], [SEP], [PAD]).
        vocab_size: int.

    Returns:
        {"loss": mean cross-entropy (nats), "accuracy": share predicted by the most frequent token}.
    """
    counts = np.bincount(np.asarray(ids)[np.asarray(mask).astype(bool)], minlength=vocab_size).astype(np.float64)
    counts[list(special_ids)] = 0.0
    log_p = np.log((counts + 1.0) / (counts.sum() + vocab_size))
    chosen = np.asarray(labels)[np.asarray(weights) > 0]
    if not len(chosen):
        raise ValueError("No masked token to score the unigram predictor on.")
    return {"loss": float(-log_p[chosen].mean()), "accuracy": float(np.mean(chosen == np.argmax(counts)))}
