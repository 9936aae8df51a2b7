"""STS12-16, STS Benchmark and SICK readers for SentEval's `data/downstream` layout.

Pairs come with their gold similarity scores; training code (PAUSE's STS-B
fine-tuning, SimCSE's `stsb:<split>` sentences) and the evaluators read them here.
"""

from __future__ import annotations

import dataclasses
from typing import Dict, List, Tuple

import numpy as np

from common.data.files import read_lines, require_data_dir
from common.errors import UserError

STS_SUBSETS: Dict[str, Tuple[str, ...]] = {
    "sts12": ("MSRpar", "MSRvid", "SMTeuroparl", "surprise.OnWN", "surprise.SMTnews"),
    "sts13": ("FNWN", "headlines", "OnWN"),
    "sts14": ("deft-forum", "deft-news", "headlines", "images", "OnWN", "tweet-news"),
    "sts15": ("answers-forums", "answers-students", "belief", "headlines", "images"),
    "sts16": ("answer-answer", "headlines", "plagiarism", "postediting", "question-question"),
}
STS_YEARS = tuple(STS_SUBSETS)
# What a held-out set of your own holds (`train.py --dev_task`): "auto" reads it from the data; "scored" pairs
# carry similarity scores, "binary" pairs 0/1 labels, and "retrieval" is a BEIR folder.
DEV_TASKS = ("auto", "scored", "binary", "retrieval")


@dataclasses.dataclass
class PairSet:
    """Sentence pairs with gold similarity scores."""

    sentences1: List[str]
    sentences2: List[str]
    scores: np.ndarray

    def __len__(self) -> int:
        return len(self.scores)


def _parse_score(text: str, path: str, line_no: int) -> float:
    try:
        return float(text)
    except ValueError:
        raise UserError(f"{path}:{line_no}: expected a similarity score (a number), got {text!r}.") from None


def load_sts_subset(data_path: str, year: str, subset: str) -> PairSet:
    """One STS12-16 subset; pairs with an empty gold line are skipped as SentEval does."""
    directory = require_data_dir(data_path, "downstream", "STS", f"{year.upper()}-en-test")
    input_path = f"{directory}/STS.input.{subset}.txt"
    gold_path = f"{directory}/STS.gs.{subset}.txt"
    inputs = read_lines(input_path)
    golds = read_lines(gold_path)
    if len(inputs) != len(golds):
        raise UserError(
            f"{input_path} has {len(inputs)} lines but {gold_path} has {len(golds)}; expected one gold line per pair."
        )
    s1, s2, scores = [], [], []
    for line_no, (line, gold) in enumerate(zip(inputs, golds), start=1):
        if not gold.strip():
            continue
        fields = line.split("\t")
        if len(fields) < 2:
            raise UserError(f"{input_path}:{line_no}: expected two tab-separated sentences, "
                            f"got {len(fields)} field(s).")
        s1.append(fields[0])
        s2.append(fields[1])
        scores.append(_parse_score(gold.strip(), gold_path, line_no))
    return PairSet(s1, s2, np.asarray(scores, np.float64))


def load_stsb(data_path: str, split: str) -> PairSet:
    """STS Benchmark `sts-<split>.csv` (score in column 4, sentences in 5 and 6)."""
    directory = require_data_dir(data_path, "downstream", "STS", "STSBenchmark")
    path = f"{directory}/sts-{split}.csv"
    s1, s2, scores = [], [], []
    for line_no, line in enumerate(read_lines(path), start=1):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) < 7:
            raise UserError(f"{path}:{line_no}: expected at least 7 tab-separated columns, got {len(fields)}.")
        scores.append(_parse_score(fields[4], path, line_no))
        s1.append(fields[5])
        s2.append(fields[6])
    return PairSet(s1, s2, np.asarray(scores, np.float64))


def load_sick(data_path: str, split: str = "test") -> Tuple[PairSet, List[str]]:
    """SICK `SICK_{train,trial,test_annotated}.txt`: pairs with relatedness, plus entailment labels."""
    names = {"train": "SICK_train.txt", "dev": "SICK_trial.txt", "test": "SICK_test_annotated.txt"}
    if split not in names:
        raise UserError(f"Unknown SICK split {split!r}; expected one of {sorted(names)}.")
    directory = require_data_dir(data_path, "downstream", "SICK")
    path = f"{directory}/{names[split]}"
    lines = read_lines(path)
    expected = ["pair_ID", "sentence_A", "sentence_B", "relatedness_score", "entailment_judgment"]
    if not lines or lines[0].split("\t")[:5] != expected:
        raise UserError(f"{path}:1: expected the header {expected}.")
    s1, s2, scores, labels = [], [], [], []
    for line_no, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) < 5:
            raise UserError(f"{path}:{line_no}: expected 5 tab-separated columns, got {len(fields)}.")
        s1.append(fields[1])
        s2.append(fields[2])
        scores.append(_parse_score(fields[3], path, line_no))
        labels.append(fields[4])
    return PairSet(s1, s2, np.asarray(scores, np.float64)), labels


def load_all(data_path: str) -> Dict[str, Dict[str, PairSet]]:
    """Every set test_sts.py scores: {"sts12": {subset: PairSet}, ..., "stsb": {...}, "sickr": {...}}."""
    sets: Dict[str, Dict[str, PairSet]] = {}
    for year, subsets in STS_SUBSETS.items():
        sets[year] = {name: load_sts_subset(data_path, year, name) for name in subsets}
    sets["stsb"] = {"test": load_stsb(data_path, "test"), "dev": load_stsb(data_path, "dev")}
    sets["sickr"] = {"test": load_sick(data_path, "test")[0]}
    return sets
