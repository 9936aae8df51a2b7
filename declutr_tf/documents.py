"""Training documents for DeCLUTR and the seeded stream of span batches."""

from __future__ import annotations

import dataclasses
import math
import statistics
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf

from common.data.fingerprint import fingerprint_rows
from common.data.documents import AUTO, read_document_files
from common.data.sampling import StreamSampler
from common.errors import UserError
from declutr_tf.span_sampling import SpanConfig, sample_spans


# Span settings are suggested so that this share of the documents read (rounded down) is long enough.
USABLE_SHARE = 0.9


@dataclasses.dataclass
class Documents:
    """Usable documents (whitespace-tokenized) and the lengths of every document read.

    Attributes:
        tokens: list of list of str. The documents long enough for the span settings, as words.
        lengths: list of int. Words of every (non-empty) document read, usable or not, in reading order.
        files: int. Files read.
        sources: list of str. The paths given (files or directories).
    """

    tokens: List[List[str]]
    lengths: List[int]
    files: int
    sources: List[str]

    @property
    def skipped_short(self) -> int:
        return len(self.lengths) - len(self.tokens)

    def fingerprint(self) -> str:
        return fingerprint_rows(" ".join(doc) for doc in self.tokens)


@dataclasses.dataclass(frozen=True)
class SpanAdvice:
    """Span settings that make USABLE_SHARE of the documents usable (rounded down).

    Attributes:
        settings: dict. Flag name -> value, only those that change.
        usable: int. Documents long enough under them.
    """

    settings: Dict[str, int]
    usable: int

    def flags(self) -> str:
        return " ".join(f"--{name}={value}" for name, value in self.settings.items())


def usable_count(lengths: Sequence[int], config: SpanConfig) -> int:
    """How many documents of these lengths (words) are long enough for `config`."""
    return sum(length >= config.min_document_len for length in lengths)


def suggest_spans(lengths: Sequence[int], config: SpanConfig, share: float = USABLE_SHARE) -> Optional[SpanAdvice]:
    """The mildest change of span settings that makes `share` of the documents usable (rounded down).

    In order of preference: the largest --max_span_len (>= --min_span_len) that does; else
    --num_anchors=1 with the largest --max_span_len that does; else one anchor of a single
    span length (--min_span_len = --max_span_len). A document is usable when it has
    num_anchors * max_span_len * 2 words (`SpanConfig.min_document_len`).

    Returns:
        None when the settings already use `share` of the documents, or when no setting
        does (documents of a single word).
    """
    if not lengths:
        return None
    needed = max(1, math.floor(share * len(lengths)))  # of 4 documents 3, so that one outlier does not decide
    if usable_count(lengths, config) >= needed:
        return None
    words = sorted(lengths, reverse=True)[needed - 1]  # the needed-th longest document must fit
    longest = words // (2 * config.num_anchors)  # < max_span_len: fewer than `needed` fit today
    candidates = [{"max_span_len": longest}]
    one = min(words // 2, config.max_span_len)
    if config.num_anchors > 1:
        candidates.append({"num_anchors": 1, **({"max_span_len": one} if one < config.max_span_len else {})})
    candidates.append({**({"num_anchors": 1} if config.num_anchors > 1 else {}), "min_span_len": one,
                       "max_span_len": one})
    for settings in candidates:
        values = {**dataclasses.asdict(config), **settings}
        if 1 <= values["min_span_len"] <= values["max_span_len"]:
            advised = dataclasses.replace(config, **settings)
            return SpanAdvice(settings, usable_count(lengths, advised))
    return None


def _n(count: int, noun: str) -> str:
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def describe_lengths(documents: Documents, config: SpanConfig) -> Tuple[str, Dict[str, Any]]:
    """What the run's span settings make of the documents read: a sentence, and its counts.

    Returns:
        (summary, counts). The summary is one sentence for the log, e.g. "Read 1,204 documents from
        1,204 files; 310 are long enough for --num_anchors=2 --max_span_len=512 (at least 2,048 words);
        894 are shorter (median 640 words) and skipped: --max_span_len=160 would use 1,150 of the 1,204."
        The counts are for the run's data info: documents_read, documents (usable),
        skipped_short, min_document_words, short_median_words (None when none is short),
        suggestion (flags, or None) and suggestion_uses (documents usable under it).
    """
    read, usable, minimum = len(documents.lengths), len(documents.tokens), config.min_document_len
    short = sorted(length for length in documents.lengths if length < minimum)
    advice = suggest_spans(documents.lengths, config)
    settings = f"--num_anchors={config.num_anchors} --max_span_len={config.max_span_len}"
    summary = f"Read {_n(read, 'document')} from {_n(documents.files, 'file')}; "
    if not short:
        summary += f"all are long enough for {settings} (at least {minimum:,} words)."
    else:
        summary += (f"{usable:,} {'is' if usable == 1 else 'are'} long enough for {settings} (at least {minimum:,} "
                    f"words); {len(short):,} {'is' if len(short) == 1 else 'are'} shorter (median "
                    f"{_n(statistics.median_low(short), 'word')}) and skipped")
        if advice is not None:
            summary += f": {advice.flags()} would use {advice.usable:,} of the {read:,}."
        elif usable < max(1, math.floor(USABLE_SHARE * read)):
            summary += (f"; no span settings use {USABLE_SHARE * 100:.0f} % of them (a document needs 2 words or "
                        "more).")
        else:
            summary += "."
    return summary, {"documents_read": read, "documents": usable, "skipped_short": len(short),
                     "min_document_words": minimum,
                     "short_median_words": statistics.median_low(short) if short else None,
                     "suggestion": advice.flags() if advice else None,
                     "suggestion_uses": advice.usable if advice else None}


def read_documents(paths: List[str], config: SpanConfig, layout: str = AUTO) -> Documents:
    """Reads documents from files and directories (`common.data.documents`: one per line of a
    file, or one per file of a directory, read recursively; `layout` chooses).

    Documents shorter than `config.min_document_len` whitespace words are skipped and
    counted; empty lines and files are ignored.

    Raises:
        UserError: when no document is long enough, with the counts and the span settings
            that would use most of them.
        FileNotFoundError: for a path that does not exist.
    """
    if not paths:
        raise UserError("No DeCLUTR training data given; expected --train_data=<files or directories of documents>.")
    tokens, lengths, files = [], [], 0
    for file in read_document_files(paths, layout):
        files += 1
        for document in file.documents:
            words = document.split()
            lengths.append(len(words))
            if len(words) >= config.min_document_len:
                tokens.append(words)
    documents = Documents(tokens, lengths, files, list(paths))
    if not lengths:
        raise UserError(f"No document in {list(paths)}: the {_n(files, 'file')} read "
                        f"{'holds' if files == 1 else 'hold'} no text; expected text files.")
    if not tokens:
        advice = suggest_spans(lengths, config)
        settings = f"--num_anchors={config.num_anchors} --max_span_len={config.max_span_len}"
        what = f"{advice.flags()} would use {advice.usable:,} of them, or give longer documents" if advice else (
            "give longer documents")
        raise UserError(
            f"No document is long enough for DeCLUTR: read {_n(len(lengths), 'document')} from {_n(files, 'file')}, "
            f"all shorter than the {config.min_document_len:,} words that {settings} need (median "
            f"{_n(statistics.median_low(lengths), 'word')}); {what}.")
    return documents


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
