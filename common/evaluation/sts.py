"""STS12-16, STS Benchmark and SICK-R from SentEval's `data/downstream` layout,
scored by the Spearman correlation of cosine similarities (x100).

For STS12-16 three aggregates are reported: "all" (the pairs of a year pooled
into one correlation: the protocol of SBERT, SimCSE and PAUSE, our headline
number), and SentEval's "mean" and "wmean" (mean of the per-subset correlations,
unweighted and weighted by pair count).
"""

from __future__ import annotations

import time
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
from scipy.stats import pearsonr, spearmanr

from common.data.sts import STS_YEARS, PairSet, load_all, load_sick, load_stsb
from common.data.tables import read_table
from common.errors import UserError

# The seven headline numbers averaged into "avg".
HEADLINE_KEYS = ("sts12", "sts13", "sts14", "sts15", "sts16", "stsb", "sickr")


def cosine_scores(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cosine similarity of two [n, dim] arrays (zero vectors give 0)."""
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    norms = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    return np.sum(a * b, axis=1) / np.maximum(norms, 1e-12)


def pearson100(predicted: np.ndarray, gold: np.ndarray) -> float:
    """Pearson correlation x100; NaN when either side is constant."""
    if np.std(predicted) == 0 or np.std(gold) == 0:
        return float("nan")
    return float(pearsonr(np.asarray(predicted, np.float64), np.asarray(gold, np.float64)).statistic * 100.0)


def aggregate_subsets(predictions: Dict[str, np.ndarray], golds: Dict[str, np.ndarray],
                      with_pearson: bool = False) -> Dict[str, object]:
    """One STS year from per-subset predictions: "all" (the pairs pooled into one
    Spearman), SentEval's "mean" and "wmean" (per-subset Spearman, unweighted and
    weighted by pair count), "subsets" and "pairs"; the same three for Pearson when asked."""
    sizes = np.array([len(golds[s]) for s in predictions], np.float64)
    pooled_pred = np.concatenate([predictions[s] for s in predictions])
    pooled_gold = np.concatenate([golds[s] for s in predictions])
    spearman = {s: spearman100(predictions[s], golds[s]) for s in predictions}
    out: Dict[str, object] = {
        "all": spearman100(pooled_pred, pooled_gold),
        "mean": float(np.mean(list(spearman.values()))),
        "wmean": float(np.average(list(spearman.values()), weights=sizes)),
    }
    if with_pearson:
        pearsons = [pearson100(predictions[s], golds[s]) for s in predictions]
        out["pearson"] = {"all": pearson100(pooled_pred, pooled_gold), "mean": float(np.mean(pearsons)),
                          "wmean": float(np.average(pearsons, weights=sizes))}
    out["subsets"] = spearman
    out["pairs"] = int(sizes.sum())
    return out


def spearman100(predicted: np.ndarray, gold: np.ndarray) -> float:
    """Spearman correlation x100."""
    if len(gold) < 2:
        raise ValueError("Spearman correlation needs at least two pairs.")
    return float(spearmanr(predicted, gold).correlation * 100.0)


def evaluate_sts(embed: Callable[[Sequence[str]], np.ndarray], data_path: str) -> Dict[str, object]:
    """Scores an embedding function (a bi-encoder) on STS12-16, STS-B (test, dev) and SICK-R (test).

    Every distinct sentence is embedded once; a pair's score is the cosine similarity.

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

    return _score_sets(sets, predict, start)


def evaluate_sts_pairs(score_pairs: Callable[[Sequence[str], Sequence[str]], np.ndarray],
                       data_path: str) -> Dict[str, object]:
    """Scores a pair scorer (a cross-encoder) on the same sets as `evaluate_sts`.

    Args:
        score_pairs: callable. (first sentences, second sentences) -> [n] scores.
        data_path: str. Data root in SentEval's layout.

    Returns:
        The same dict as `evaluate_sts` (Spearman of the pair scores).
    """
    start = time.time()
    sets = load_all(data_path)
    return _score_sets(sets, lambda ps: score_pairs(ps.sentences1, ps.sentences2), start)


def _score_sets(sets: Dict[str, Dict[str, PairSet]], predict: Callable[[PairSet], np.ndarray],
                start: float) -> Dict[str, object]:
    results: Dict[str, object] = {}
    for year in STS_YEARS:
        results[year] = aggregate_subsets({name: predict(ps) for name, ps in sets[year].items()},
                                          {name: ps.scores for name, ps in sets[year].items()})
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


def format_comparison(baseline: Dict[str, object], results: Dict[str, object]) -> str:
    """The headline numbers of a baseline and a model side by side, with the difference."""
    names = [*STS_YEARS, "stsb", "sickr", "avg"]
    before = headline_numbers(baseline) + [baseline["avg"]]
    after = headline_numbers(results) + [results["avg"]]
    return comparison_table(list(zip(names, before, after)), str(baseline["model"]), str(results["model"]))


def comparison_table(rows: Sequence[Tuple[str, float, float]], baseline: str, model: str,
                     first: str = "set") -> str:
    """Rows of (name, the baseline's number, the model's) side by side, with the change.

    Args:
        rows: sequence of (str, float, float).
        baseline: str. The baseline's name (a column header).
        model: str. The model's name (a column header).
        first: str. The first column's header. Defaults to "set".
    """
    width = max(10, len(baseline), len(model))
    label = max(8, *(len(name) for name, _, _ in rows))
    lines = [f"{first:<{label}} {baseline[:width]:>{width}} {model[:width]:>{width}} {'change':>7}"]
    lines += [f"{n:<{label}} {b:{width}.2f} {a:{width}.2f} {a - b:+7.2f}" for n, b, a in rows]
    return "\n".join(lines)


def format_txt(results: Dict[str, object]) -> str:
    """`key=value` lines (correlations in [-1, 1]) as the original PAUSE code wrote them."""
    lines = [f"{year}={results[year]['all'] / 100:.6f}" for year in STS_YEARS]
    lines.append(f"stsb={results['stsb']['test'] / 100:.6f}")
    lines.append(f"stsb_dev={results['stsb']['dev'] / 100:.6f}")
    lines.append(f"sickr={results['sickr']['test'] / 100:.6f}")
    lines.append(f"avg={results['avg'] / 100:.6f}")
    return "\n".join(lines) + "\n"


# The fields of a scored pair file (`test_sts.py --pairs`).
PAIR_SCORE_FIELDS = ("sentence1", "sentence2", "score")


def read_scored_pairs(path: str, columns: Optional[Dict[str, str]] = None) -> PairSet:
    """Sentence pairs with gold scores from a CSV, TSV, JSONL or Parquet file (common.data.tables):
    columns `sentence1`, `sentence2`, `score` (or `label`), or those `columns` maps them to.

    Raises:
        UserError: for a missing column, a score that is not a number (file:line), or fewer than two pairs.
    """
    table = read_table(path, PAIR_SCORE_FIELDS, columns, aliases={"score": ("label",)})
    scores = []
    for line, text in zip(table.lines, table.fields["score"]):
        try:
            scores.append(float(text))
        except ValueError:
            raise UserError(f"{path}:{line}: expected a similarity score (a number), got {text!r}; pairs labelled "
                             "with two names take --labels=<different>,<same>.") from None
    if len(scores) < 2:
        raise UserError(f"{path}: {len(scores)} scored pair(s); a correlation needs at least two.")
    return PairSet(table.fields["sentence1"], table.fields["sentence2"], np.asarray(scores, np.float64))


def score_pair_set(pairs: PairSet, predicted: np.ndarray) -> Dict[str, object]:
    """{"spearman", "pearson" (x100), "pairs"} of predicted similarities against the gold scores."""
    return {"spearman": spearman100(predicted, pairs.scores), "pearson": pearson100(predicted, pairs.scores),
            "pairs": len(pairs)}


def embedding_similarities(embed: Callable[[Sequence[str]], np.ndarray], pairs: PairSet) -> np.ndarray:
    """Cosine similarity of each pair, every distinct sentence embedded once (in sorted order)."""
    unique = sorted(set(pairs.sentences1) | set(pairs.sentences2))
    vectors = embed(unique)
    index = {s: i for i, s in enumerate(unique)}
    return cosine_scores(vectors[[index[s] for s in pairs.sentences1]], vectors[[index[s] for s in pairs.sentences2]])


def pairs_spearman(embed: Callable[[Sequence[str]], np.ndarray], pairs: PairSet) -> float:
    """Spearman x100 of the cosine similarity of `pairs`, each distinct sentence embedded once."""
    return spearman100(embedding_similarities(embed, pairs), pairs.scores)


def stsb_dev_spearman(embed: Callable[[Sequence[str]], np.ndarray], data_path: str) -> float:
    """Spearman x100 of cosine similarity on STS-B dev: the validation number used during training."""
    return pairs_spearman(embed, load_stsb(data_path, "dev"))


def sickr_test_spearman(embed: Callable[[Sequence[str]], np.ndarray], data_path: str) -> float:
    """Spearman x100 of cosine similarity on SICK-R test (SentEval's 4,927 pairs)."""
    return pairs_spearman(embed, load_sick(data_path, "test")[0])
