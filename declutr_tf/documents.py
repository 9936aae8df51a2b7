"""Training documents for DeCLUTR and the seeded stream of span batches."""

from __future__ import annotations

import dataclasses
from typing import List

import numpy as np
import tensorflow as tf

from common.data.fingerprint import fingerprint_rows
from common.data.files import DATA_HELP, read_lines
from common.data.sampling import StreamSampler
from common.errors import UserError
from declutr_tf.span_sampling import SpanConfig, sample_spans


@dataclasses.dataclass
class Documents:
    """Usable documents (whitespace-tokenized) and what was skipped."""

    tokens: List[List[str]]
    skipped_short: int
    sources: List[str]

    def fingerprint(self) -> str:
        return fingerprint_rows(" ".join(doc) for doc in self.tokens)


def _files(path: str) -> List[str]:
    if tf.io.gfile.isdir(path):
        files = sorted(f for f in tf.io.gfile.glob(path.rstrip("/") + "/*.txt"))
        if not files:
            raise FileNotFoundError(f"{path}: a directory without .txt files; expected one document per line.")
        return files
    if tf.io.gfile.exists(path):
        return [path]
    raise FileNotFoundError(f"DeCLUTR training data not found: {path}; {DATA_HELP}.")


def read_documents(paths: List[str], config: SpanConfig) -> Documents:
    """Reads documents (one per line) from files or directories of .txt files.

    Documents shorter than `config.min_document_len` whitespace tokens are
    skipped and counted; empty lines are ignored.

    Raises:
        UserError: when no document is long enough, with the counts.
    """
    if not paths:
        raise UserError("No DeCLUTR training data given (--train_data).")
    tokens, skipped, files = [], 0, []
    for path in paths:
        for file in _files(path):
            files.append(file)
            for line in read_lines(file):
                words = line.split()
                if not words:
                    continue
                if len(words) < config.min_document_len:
                    skipped += 1
                    continue
                tokens.append(words)
    if not tokens:
        raise UserError(
            f"No usable document in {files}: all {skipped} are shorter than {config.min_document_len} tokens "
            f"(num_anchors * max_span_len * 2). Use longer documents or lower --max_span_len / --num_anchors."
        )
    return Documents(tokens, skipped, files)


def span_batches(documents: Documents, config: SpanConfig, batch_size: int, seed: int, start_step: int = 0):
    """Endless batches of (anchors, positives) text, a pure function of the seed.

    Each batch takes `batch_size` documents (each document reshuffled per pass)
    and samples A anchors with P positives each from every one of them; the span
    randomness of step k comes from `np.random.default_rng([seed, k])`.

    Returns:
        Dataset of (anchors tf.string [batch*A], positives tf.string [batch*A*P],
        step int64 []) — the step seeds the MLM masking of that batch.
    """
    sampler = StreamSampler([np.arange(len(documents.tokens))], [1.0], batch_size, seed)
    a, p = config.num_anchors, config.num_positives

    def generate():
        for step, doc_ids in enumerate(sampler.batches(start_step), start=start_step):
            rng = np.random.default_rng([seed, step])
            anchors, positives = [], []
            for doc_id in doc_ids:
                words = documents.tokens[doc_id]
                doc_anchors, doc_positives = sample_spans(len(words), config, rng)
                anchors += [" ".join(words[s:e]) for s, e in doc_anchors]
                positives += [" ".join(words[s:e]) for spans in doc_positives for s, e in spans]
            yield np.array(anchors, dtype=object), np.array(positives, dtype=object), np.int64(step)

    signature = (tf.TensorSpec([batch_size * a], tf.string), tf.TensorSpec([batch_size * a * p], tf.string),
                 tf.TensorSpec([], tf.int64))
    return tf.data.Dataset.from_generator(generate, output_signature=signature)
