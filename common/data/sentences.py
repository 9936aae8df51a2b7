"""Sentences cut from running text: a rule-based splitter and a seeded sample.

Unsupervised SimCSE trains on single sentences (the paper: 10^6 sentences of
English Wikipedia); offline, they are cut from the Gutenberg books.
"""

from __future__ import annotations

import re
from typing import List, Sequence

import numpy as np

from common.data.files import read_lines
from common.errors import UserError

# Titles and common abbreviations that end with a period but do not end a sentence.
ABBREVIATIONS = frozenset(
    "mr mrs ms dr st jr sr prof rev gen col capt lt sgt hon messrs mme mlle vs etc viz cf no vol ch fig "
    "jan feb mar apr jun jul aug sep sept oct nov dec i.e e.g a.m p.m".split())
# A sentence ends at . ! or ? (closing quotes and brackets stay with it), before
# white space and the next sentence's first character (a capital, digit, quote or bracket).
_BOUNDARY = re.compile(r"""([.!?]+["'”’)\]]*)\s+(?=["'“‘(\[]*[A-Z0-9])""")


def split_sentences(text: str) -> List[str]:
    """Splits running text into sentences.

    A boundary is ., ! or ? (with any closing quotes) followed by white space and an
    upper-case letter, a digit or an opening quote, except after a known abbreviation
    ("Mr.", "e.g.") or a single initial ("J. Smith").
    """
    sentences, start = [], 0
    for match in _BOUNDARY.finditer(text):
        end = match.end(1)
        before = text[start:match.start(1)].rsplit(None, 1)
        last_word = before[-1].lower().strip("“‘\"'(") if before else ""
        if match.group(1).startswith(".") and (last_word in ABBREVIATIONS
                                               or (len(last_word) == 1 and last_word.isalpha())):
            continue
        sentence = text[start:end].strip()
        if sentence:
            sentences.append(sentence)
        start = match.end()
    tail = text[start:].strip()
    if tail:
        sentences.append(tail)
    return sentences


def sentences_from_documents(paths: Sequence[str], max_sentences: int, seed: int, min_words: int = 4,
                             max_words: int = 64) -> List[str]:
    """A seeded sample of distinct sentences cut from documents (one document per line).

    Args:
        paths: sequence of str. Files of documents, one per line (local or gs://).
        max_sentences: int. Sample size; every sentence is kept when there are fewer.
        seed: int. Seeds the sample.
        min_words: int. Shorter sentences (headings, "Yes.") are dropped.
        max_words: int. Longer "sentences" (lists, verse without punctuation) are dropped.

    Returns:
        Sentences in a seeded random order.
    """
    seen = {}
    for path in paths:
        for document in read_lines(path):
            for sentence in split_sentences(document):
                if min_words <= len(sentence.split()) <= max_words:
                    seen.setdefault(sentence, None)
    if not seen:
        raise UserError(f"No sentences of {min_words}-{max_words} words in {list(paths)}.")
    found = list(seen)
    order = np.random.default_rng(seed).permutation(len(found))[:max_sentences]
    return [found[i] for i in order]
