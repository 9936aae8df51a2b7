"""Small generated training files for smoke runs (seconds long, on the tiny test encoder).

Every method's `smoke` settings point at files written here, so the smoke, replica
and resume checks of each registered method need no shared data.
"""

from __future__ import annotations

import json
import os

import numpy as np

_NOUNS = ("man", "woman", "dog", "child", "cat", "bird", "chef", "runner", "player", "singer")
_VERBS = ("runs", "sleeps", "eats", "sings", "jumps", "reads", "cooks", "swims")
_LABELS = ("entailment", "neutral", "contradiction")


def write_nli_jsonl(path: str, n: int = 60, seed: int = 0) -> str:
    """SNLI-format jsonl with `n` pairs: each premise has one hypothesis per label."""
    rng = np.random.default_rng(seed)
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n):
            if i % 3 == 0:
                premise = f"the {rng.choice(_NOUNS)} {rng.choice(_VERBS)} in place {i} ."
            hypothesis = f"a {rng.choice(_NOUNS)} {rng.choice(_VERBS)} near spot {i} ."
            f.write(json.dumps({"sentence1": premise, "sentence2": hypothesis, "gold_label": _LABELS[i % 3]}) + "\n")
    return path


def write_sentences(path: str, n: int = 40) -> str:
    """`n` distinct sentences, one per line."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(f"sentence number {i} about topic {i % 5} ." for i in range(n)) + "\n")
    return path


def write_documents(path: str, n: int = 6, words: int = 300) -> str:
    """`n` documents of `words` whitespace tokens, one document per line."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(" ".join(f"word{d}_{(i * 7 + d) % 37}" for i in range(words)) for d in range(n)) + "\n")
    return path
