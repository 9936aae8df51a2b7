"""STS12-16, STS Benchmark and SICK-R from SentEval's `data/downstream` layout,
scored by the Spearman correlation of cosine similarities (x100).

For STS12-16 three aggregates are reported: "all" (the pairs of a year pooled
into one correlation: the protocol of SBERT, SimCSE and PAUSE, our headline
number), and SentEval's "mean" and "wmean" (mean of the per-subset correlations,
unweighted and weighted by pair count).
"""

from __future__ import annotations

import dataclasses
import time
from typing import Callable, Dict, List, Sequence, Tuple

import numpy as np
import tensorflow as tf
from scipy.stats import spearmanr

from common.data import open_data_file, require_data_dir

STS_SUBSETS: Dict[str, Tuple[str, ...]] = {
    "sts12": ("MSRpar", "MSRvid", "SMTeuroparl", "surprise.OnWN", "surprise.SMTnews"),
    "sts13": ("FNWN", "headlines", "OnWN"),
    "sts14": ("deft-forum", "deft-news", "headlines", "images", "OnWN", "tweet-news"),
    "sts15": ("answers-forums", "answers-students", "belief", "headlines", "images"),
    "sts16": ("answer-answer", "headlines", "plagiarism", "postediting", "question-question"),
}
STS_YEARS = tuple(STS_SUBSETS)
# The seven headline numbers averaged into "avg".
HEADLINE_KEYS = ("sts12", "sts13", "sts14", "sts15", "sts16", "stsb", "sickr")


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
        raise ValueError(f"{path}:{line_no}: expected a similarity score (a number), got {text!r}.") from None


def load_sts_subset(data_path: str, year: str, subset: str) -> PairSet:
    """One STS12-16 subset; pairs with an empty gold line are skipped as SentEval does."""
    directory = require_data_dir(data_path, "downstream", "STS", f"{year.upper()}-en-test")
    input_path = f"{directory}/STS.input.{subset}.txt"
    gold_path = f"{directory}/STS.gs.{subset}.txt"
    inputs = open_data_file(input_path).splitlines()
    golds = open_data_file(gold_path).splitlines()
    if len(inputs) != len(golds):
        raise ValueError(
            f"{input_path} has {len(inputs)} lines but {gold_path} has {len(golds)}; expected one gold line per pair."
        )
    s1, s2, scores = [], [], []
    for line_no, (line, gold) in enumerate(zip(inputs, golds), start=1):
        if not gold.strip():
            continue
        fields = line.split("\t")
        if len(fields) < 2:
            raise ValueError(f"{input_path}:{line_no}: expected two tab-separated sentences, got {len(fields)} field(s).")
        s1.append(fields[0])
        s2.append(fields[1])
        scores.append(_parse_score(gold.strip(), gold_path, line_no))
    return PairSet(s1, s2, np.asarray(scores, np.float64))


def load_stsb(data_path: str, split: str) -> PairSet:
    """STS Benchmark `sts-<split>.csv` (score in column 4, sentences in 5 and 6)."""
    directory = require_data_dir(data_path, "downstream", "STS", "STSBenchmark")
    path = f"{directory}/sts-{split}.csv"
    s1, s2, scores = [], [], []
    for line_no, line in enumerate(open_data_file(path).splitlines(), start=1):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) < 7:
            raise ValueError(f"{path}:{line_no}: expected at least 7 tab-separated columns, got {len(fields)}.")
        scores.append(_parse_score(fields[4], path, line_no))
        s1.append(fields[5])
        s2.append(fields[6])
    return PairSet(s1, s2, np.asarray(scores, np.float64))


def load_sick(data_path: str, split: str = "test") -> Tuple[PairSet, List[str]]:
    """SICK `SICK_{train,trial,test_annotated}.txt`: pairs with relatedness, plus entailment labels."""
    names = {"train": "SICK_train.txt", "dev": "SICK_trial.txt", "test": "SICK_test_annotated.txt"}
    if split not in names:
        raise ValueError(f"Unknown SICK split {split!r}; expected one of {sorted(names)}.")
    directory = require_data_dir(data_path, "downstream", "SICK")
    path = f"{directory}/{names[split]}"
    lines = open_data_file(path).splitlines()
    expected = ["pair_ID", "sentence_A", "sentence_B", "relatedness_score", "entailment_judgment"]
    if not lines or lines[0].split("\t")[:5] != expected:
        raise ValueError(f"{path}:1: expected the header {expected}.")
    s1, s2, scores, labels = [], [], [], []
    for line_no, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) < 5:
            raise ValueError(f"{path}:{line_no}: expected 5 tab-separated columns, got {len(fields)}.")
        s1.append(fields[1])
        s2.append(fields[2])
        scores.append(_parse_score(fields[3], path, line_no))
        labels.append(fields[4])
    return PairSet(s1, s2, np.asarray(scores, np.float64)), labels


def cosine_scores(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cosine similarity of two [n, dim] arrays (zero vectors give 0)."""
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    norms = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    return np.sum(a * b, axis=1) / np.maximum(norms, 1e-12)


def spearman100(predicted: np.ndarray, gold: np.ndarray) -> float:
    """Spearman correlation x100."""
    if len(gold) < 2:
        raise ValueError("Spearman correlation needs at least two pairs.")
    return float(spearmanr(predicted, gold).correlation * 100.0)


def load_all(data_path: str) -> Dict[str, Dict[str, PairSet]]:
    """Every set test_sts.py scores: {"sts12": {subset: PairSet}, ..., "stsb": {...}, "sickr": {...}}."""
    sets: Dict[str, Dict[str, PairSet]] = {}
    for year, subsets in STS_SUBSETS.items():
        sets[year] = {name: load_sts_subset(data_path, year, name) for name in subsets}
    sets["stsb"] = {"test": load_stsb(data_path, "test"), "dev": load_stsb(data_path, "dev")}
    sets["sickr"] = {"test": load_sick(data_path, "test")[0]}
    return sets


def evaluate_sts(embed: Callable[[Sequence[str]], np.ndarray], data_path: str) -> Dict[str, object]:
    """Scores an embedding function on STS12-16, STS-B (test, dev) and SICK-R (test).

    Every distinct sentence is embedded once.

    Args:
        embed: callable. List of sentences -> [n, dim] array.
        data_path: str. Data root in SentEval's layout (`<root>/downstream/STS/...`).

    Returns:
        Dict as written to `sts_<name>.json`: per STS year `all`, `mean`,
        `wmean`, `subsets`, `pairs`; `stsb` {test, dev}; `sickr` {test}; `avg`
        (mean of the 7 headline numbers); `seconds`.
    """
    start = time.time()
    sets = load_all(data_path)
    unique = sorted({s for group in sets.values() for ps in group.values() for s in ps.sentences1 + ps.sentences2})
    vectors = embed(unique)
    index = {s: i for i, s in enumerate(unique)}

    def predict(ps: PairSet) -> np.ndarray:
        return cosine_scores(vectors[[index[s] for s in ps.sentences1]], vectors[[index[s] for s in ps.sentences2]])

    results: Dict[str, object] = {}
    for year in STS_YEARS:
        preds = {name: predict(ps) for name, ps in sets[year].items()}
        per = {name: spearman100(preds[name], ps.scores) for name, ps in sets[year].items()}
        sizes = np.array([len(ps) for ps in sets[year].values()], np.float64)
        results[year] = {
            "all": spearman100(np.concatenate(list(preds.values())),
                               np.concatenate([ps.scores for ps in sets[year].values()])),
            "mean": float(np.mean(list(per.values()))),
            "wmean": float(np.average(list(per.values()), weights=sizes)),
            "subsets": per,
            "pairs": int(sizes.sum()),
        }
    results["stsb"] = {split: spearman100(predict(ps), ps.scores) for split, ps in sets["stsb"].items()}
    results["sickr"] = {"test": spearman100(predict(sets["sickr"]["test"]), sets["sickr"]["test"].scores)}
    results["avg"] = float(np.mean(headline_numbers(results)))
    results["seconds"] = round(time.time() - start, 2)
    return results


def headline_numbers(results: Dict[str, object]) -> List[float]:
    """The 7 headline numbers: STS12-16 "all", STS-B test, SICK-R test."""
    return [results[y]["all"] for y in STS_YEARS] + [results["stsb"]["test"], results["sickr"]["test"]]


def format_table(results: Dict[str, object]) -> str:
    """A plain-text table of the results."""
    rows = [f"{'set':<8} {'all':>7} {'mean':>7} {'wmean':>7} {'pairs':>6}"]
    for year in STS_YEARS:
        r = results[year]
        rows.append(f"{year:<8} {r['all']:7.2f} {r['mean']:7.2f} {r['wmean']:7.2f} {r['pairs']:6d}")
    rows.append(f"{'stsb':<8} {results['stsb']['test']:7.2f}   (dev {results['stsb']['dev']:.2f})")
    rows.append(f"{'sickr':<8} {results['sickr']['test']:7.2f}")
    rows.append(f"{'avg':<8} {results['avg']:7.2f}   (STS12-16 all, STS-B test, SICK-R test)")
    return "\n".join(rows)


def format_txt(results: Dict[str, object]) -> str:
    """`key=value` lines (correlations in [-1, 1]) as the original PAUSE code wrote them."""
    lines = [f"{year}={results[year]['all'] / 100:.6f}" for year in STS_YEARS]
    lines.append(f"stsb={results['stsb']['test'] / 100:.6f}")
    lines.append(f"stsb_dev={results['stsb']['dev'] / 100:.6f}")
    lines.append(f"sickr={results['sickr']['test'] / 100:.6f}")
    lines.append(f"avg={results['avg'] / 100:.6f}")
    return "\n".join(lines) + "\n"


def pairs_spearman(embed: Callable[[Sequence[str]], np.ndarray], pairs: PairSet) -> float:
    """Spearman x100 of the cosine similarity of `pairs`, each distinct sentence embedded once."""
    unique = sorted(set(pairs.sentences1) | set(pairs.sentences2))
    vectors = embed(unique)
    index = {s: i for i, s in enumerate(unique)}
    pred = cosine_scores(vectors[[index[s] for s in pairs.sentences1]], vectors[[index[s] for s in pairs.sentences2]])
    return spearman100(pred, pairs.scores)


def stsb_dev_spearman(embed: Callable[[Sequence[str]], np.ndarray], data_path: str) -> float:
    """Spearman x100 of cosine similarity on STS-B dev: the validation number used during training."""
    return pairs_spearman(embed, load_stsb(data_path, "dev"))


def sickr_test_spearman(embed: Callable[[Sequence[str]], np.ndarray], data_path: str) -> float:
    """Spearman x100 of cosine similarity on SICK-R test (SentEval's 4,927 pairs)."""
    return pairs_spearman(embed, load_sick(data_path, "test")[0])
