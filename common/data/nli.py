"""NLI sentence pairs (SNLI 1.0, MultiNLI 1.0, GLUE MNLI, SentEval's SNLI files).

Readers for every distributed format, shared by PAUSE and supervised SimCSE:
  - the official zips' `*.jsonl` (`gold_label`, `sentence1`, `sentence2`);
  - the official zips' `*.txt` and GLUE's MNLI `*.tsv` (tab-separated, with a
    header naming `gold_label`, `sentence1`, `sentence2`);
  - SentEval's `downstream/SNLI/{s1,s2,labels}.<split>` (one item per line).
Pairs without a gold label ("-", or an empty gold label) are dropped, as the
datasets' authors prescribe. Anything else unexpected raises an error naming the
file and line.
"""

from __future__ import annotations

import dataclasses
import json
from typing import List, Sequence

import numpy as np
import tensorflow as tf

from common.data.fingerprint import fingerprint_rows
from common.data.files import DATA_HELP, read_lines
from common.errors import UserError

LABELS = ("entailment", "neutral", "contradiction")
LABEL_IDS = {name: i for i, name in enumerate(LABELS)}
NO_GOLD_LABEL = ("-", "")
SENTEVAL_PREFIX = "senteval:"


# The official SNLI + MultiNLI training files, relative to the data root, as
# `python download_nli.py --out=<DATA_PATH>/nli` lays them out.
DEFAULT_NLI_TRAIN = ("nli/snli_1.0/snli_1.0_train.jsonl", "nli/multinli_1.0/multinli_1.0_train.jsonl")

@dataclasses.dataclass
class NliPairs:
    """Premise/hypothesis pairs with integer labels (index into LABELS)."""

    premises: List[str]
    hypotheses: List[str]
    labels: np.ndarray
    dropped: int = 0  # pairs without a gold label

    def __len__(self) -> int:
        return len(self.labels)

    def fingerprint(self) -> str:
        """SHA-256 of the pairs and labels, recorded with trained models."""
        return fingerprint_rows(zip(self.premises, self.hypotheses, self.labels.tolist()))

    @staticmethod
    def concat(parts: Sequence["NliPairs"]) -> "NliPairs":
        return NliPairs(
            [p for part in parts for p in part.premises],
            [h for part in parts for h in part.hypotheses],
            np.concatenate([part.labels for part in parts]) if parts else np.zeros([0], np.int32),
            sum(part.dropped for part in parts),
        )


def _label(text: str, path: str, line_no: int) -> int:
    if text not in LABEL_IDS:
        raise UserError(f"{path}:{line_no}: unknown label {text!r}; expected one of {list(LABELS)} or '-'.")
    return LABEL_IDS[text]


def read_jsonl(path: str) -> NliPairs:
    """SNLI/MultiNLI 1.0 `*.jsonl`."""
    premises, hypotheses, labels, dropped = [], [], [], 0
    lines = read_lines(path)
    for line_no, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise UserError(f"{path}:{line_no}: not valid JSON ({e.msg}).") from None
        for key in ("gold_label", "sentence1", "sentence2"):
            if key not in row:
                raise UserError(f"{path}:{line_no}: missing field {key!r}.")
        gold = str(row["gold_label"]).strip()
        if gold in NO_GOLD_LABEL:
            dropped += 1
            continue
        labels.append(_label(gold, path, line_no))
        premises.append(row["sentence1"])
        hypotheses.append(row["sentence2"])
    return _finish(path, premises, hypotheses, labels, dropped)


def read_tsv(path: str) -> NliPairs:
    """SNLI/MultiNLI 1.0 `*.txt` and GLUE MNLI `*.tsv` (columns found by header name)."""
    lines = read_lines(path)
    if not lines:
        raise UserError(f"{path}: empty file; expected a header line and NLI pairs.")
    header = lines[0].split("\t")
    missing = [c for c in ("gold_label", "sentence1", "sentence2") if c not in header]
    if missing:
        raise UserError(f"{path}:1: header lacks column(s) {missing}; got {header}.")
    col = {name: header.index(name) for name in ("gold_label", "sentence1", "sentence2")}
    needed = max(col.values()) + 1
    premises, hypotheses, labels, dropped = [], [], [], 0
    for line_no, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) < needed:
            raise UserError(f"{path}:{line_no}: expected at least {needed} tab-separated columns, got {len(fields)}.")
        gold = fields[col["gold_label"]].strip()
        if gold in NO_GOLD_LABEL:
            dropped += 1
            continue
        labels.append(_label(gold, path, line_no))
        premises.append(fields[col["sentence1"]])
        hypotheses.append(fields[col["sentence2"]])
    return _finish(path, premises, hypotheses, labels, dropped)


def read_senteval_snli(data_path: str, split: str) -> NliPairs:
    """SentEval's `downstream/SNLI/{s1,s2,labels}.<split>`."""
    directory = f"{data_path.rstrip('/')}/downstream/SNLI"
    files = [f"{directory}/{name}.{split}" for name in ("s1", "s2", "labels")]
    for f in files:
        if not tf.io.gfile.exists(f):
            raise FileNotFoundError(
                f"NLI file not found: {f}. SentEval's SNLI has train, dev and test splits "
                f"(the shared data has dev and test only); {DATA_HELP}."
            )
    s1, s2, gold = (read_lines(f) for f in files)
    if not (len(s1) == len(s2) == len(gold)):
        raise UserError(f"{directory}: s1.{split}, s2.{split} and labels.{split} have "
                         f"{len(s1)}, {len(s2)} and {len(gold)} lines; expected one line per pair in each.")
    premises, hypotheses, labels, dropped = [], [], [], 0
    for line_no, (p, h, g) in enumerate(zip(s1, s2, gold), start=1):
        g = g.strip()
        if g in NO_GOLD_LABEL:
            dropped += 1
            continue
        labels.append(_label(g, files[2], line_no))
        premises.append(p)
        hypotheses.append(h)
    return _finish(files[2], premises, hypotheses, labels, dropped)


def _finish(path, premises, hypotheses, labels, dropped) -> NliPairs:
    if not labels:
        raise UserError(f"{path}: no labelled NLI pairs found (dropped {dropped} without a gold label).")
    return NliPairs(premises, hypotheses, np.asarray(labels, np.int32), dropped)


def read_nli(source: str, data_path: str = "") -> NliPairs:
    """Reads one source: a `.jsonl`, `.txt` or `.tsv` file (local or `gs://`),
    or `senteval:<split>` for `<data_path>/downstream/SNLI/*.<split>`."""
    if source.startswith(SENTEVAL_PREFIX):
        return read_senteval_snli(data_path, source[len(SENTEVAL_PREFIX):])
    if not tf.io.gfile.exists(source):
        raise FileNotFoundError(
            f"NLI file not found: {source}. Download SNLI/MultiNLI with "
            "`python download_nli.py --out=<DATA_PATH>/nli`, or put the official files there; "
            f"{DATA_HELP}."
        )
    if source.endswith(".jsonl"):
        return read_jsonl(source)
    if source.endswith((".txt", ".tsv")):
        return read_tsv(source)
    raise UserError(f"{source}: unknown NLI format; expected .jsonl, .txt, .tsv or senteval:<split>.")


def read_nli_sources(sources: Sequence[str], data_path: str = "") -> NliPairs:
    """Reads and concatenates several sources (see `read_nli`)."""
    if not sources:
        raise UserError("No NLI training data given.")
    return NliPairs.concat([read_nli(s, data_path) for s in sources])
