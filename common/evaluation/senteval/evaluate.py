"""Runs SentEval's tasks on an embedding function; the averages DeCLUTR reports; the result table.

Per task, as SentEval (facebookresearch/SentEval `senteval/*.py`) does it:

| task | features | protocol | reported |
| --- | --- | --- | --- |
| MR, CR, SUBJ, MPQA | u | nested k-fold (`inner_kfold_validation`) | devacc, acc |
| TREC | u | k-fold on train (`kfold_validation`) | devacc, acc |
| MRPC | [abs(u-v), u*v] | k-fold on train | devacc, acc, f1 |
| SST2, SST5 | u | dev split (`split_validation`) | devacc, acc |
| SICK-E | [abs(u-v), u*v] | dev split | devacc, acc |
| SNLI | [u, v, u*v, abs(u-v)] | dev split, no L2 penalty | devacc, acc |
| SICK-R, STS-B | [abs(u-v), u*v] | relatedness regressor (`fit_relatedness`) | devpearson, pearson, spearman, mse |
| STS12-16 | cosine(u, v) | none (unsupervised) | Spearman all / mean / wmean, Pearson |
| probing | u | dev split (WC always logistic regression) | devacc, acc |

Accuracies and correlations are x100. COCO caption retrieval is out of scope.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any, Callable, Dict, Optional, Sequence

import numpy as np
from absl import logging
from sklearn.metrics import f1_score

from common.data.files import DATA_HELP
from common.evaluation.senteval.cache import EmbeddingCache
from common.evaluation.senteval.classifier import (fit_relatedness, inner_kfold_validation, kfold_validation, pearson,
                                        split_validation)
from common.evaluation.senteval.configs import CONFIGS, SentEvalConfig
from common.evaluation.senteval.tasks import (GROUPS, TASKS, PairSplit, SentenceSplit, TaskData, load_task,
                                   missing_files, select_tasks)
from common.evaluation.sts import aggregate_subsets, cosine_scores, spearman100

# Embedding function: (sentences, description for a progress bar) -> float [n, dim].
Embed = Callable[[Sequence[str], str], np.ndarray]

# DeCLUTR's downstream average (Giorgi et al., ACL 2021, Table 2): the supervised
# transfer tasks without SNLI; STS12-16 are reported on their own.
DOWNSTREAM_AVERAGE_TASKS = ("CR", "MR", "MPQA", "SUBJ", "SST2", "SST5", "TREC", "MRPC", "SICK-E", "SICK-R", "STS-B")
PROBING_TASKS = GROUPS["probing"]
RELATEDNESS_TASKS = ("SICK-R", "STS-B")
# WordContent's 1000 classes: SentEval trains it with logistic regression even when nhid > 0.
LOGREG_ONLY_TASKS = ("WC",)

# === Features ===


def pair_features(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """[abs(u - v), u * v]: SentEval's features for MRPC, SICK-E, SICK-R and STS-B."""
    return np.concatenate([np.abs(u - v), u * v], axis=1)


def nli_features(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """[u, v, u * v, abs(u - v)]: SentEval's features for SNLI."""
    return np.concatenate([u, v, u * v, np.abs(u - v)], axis=1)


# === Embedding ===


@dataclasses.dataclass
class _SplitEmbedder:
    """Embeds a task's splits through the cache: each distinct sentence of a split once."""

    embed: Embed
    cache: EmbeddingCache
    model_name: str

    def __call__(self, data: TaskData, split: str):
        part = data.splits[split]
        unique = sorted(set(part.all_sentences()))
        desc = f"{data.name} {split}"
        # An empty line reaches the encoder as "." as in the PAUSE and DeCLUTR SentEval batchers.
        vectors = self.cache.embed((self.model_name, data.dataset, split), unique,
                                   lambda s: self.embed([x or "." for x in s], desc))
        index = {s: i for i, s in enumerate(unique)}
        if isinstance(part, SentenceSplit):
            return vectors[[index[s] for s in part.sentences]]
        return vectors[[index[s] for s in part.first]], vectors[[index[s] for s in part.second]]


# === Protocols ===


def _run_inner_kfold(data, vectors, config, seed, progress) -> Dict[str, Any]:
    split = data.splits["all"]
    r = inner_kfold_validation(vectors(data, "all"), split.labels, data.nclasses, config, seed, progress,
                               desc=f"{data.name} folds")
    return {"devacc": r.devacc, "acc": r.acc, "ndev": len(split), "ntest": len(split), "l2reg": list(r.l2regs)}


def _features(data: TaskData, vectors, split: str) -> np.ndarray:
    if isinstance(data.splits[split], PairSplit):
        u, v = vectors(data, split)
        return nli_features(u, v) if data.name == "SNLI" else pair_features(u, v)
    return vectors(data, split)


def _run_kfold(data, vectors, config, seed, progress) -> Dict[str, Any]:
    train, test = data.splits["train"], data.splits["test"]
    r = kfold_validation(_features(data, vectors, "train"), train.labels, _features(data, vectors, "test"),
                         test.labels, data.nclasses, config, seed, progress, desc=f"{data.name} folds")
    out = {"devacc": r.devacc, "acc": r.acc, "ndev": len(train), "ntest": len(test), "l2reg": r.l2regs[0]}
    if data.nclasses == 2:  # MRPC
        out["f1"] = round(100 * float(f1_score(test.labels, r.predictions)), 2)
    return out


def _run_split(data, vectors, config, seed, progress) -> Dict[str, Any]:
    xs = {s: (_features(data, vectors, s), data.splits[s].labels) for s in ("train", "dev", "test")}
    classifier = None
    if data.name in LOGREG_ONLY_TASKS and config.classifier.nhid > 0:
        classifier = dataclasses.replace(config.classifier, nhid=0)
    r = split_validation(xs["train"], xs["dev"], xs["test"], data.nclasses, config, seed,
                         noreg=data.name == "SNLI", classifier=classifier)
    return {"devacc": r.devacc, "acc": r.acc, "ndev": len(data.splits["dev"]), "ntest": len(data.splits["test"]),
            "l2reg": r.l2regs[0]}


def _run_relatedness(data, vectors, config, seed, progress) -> Dict[str, Any]:
    feats = {s: _features(data, vectors, s) for s in ("train", "dev", "test")}
    gold = {s: np.asarray(data.splits[s].labels, np.float64) for s in ("train", "dev", "test")}
    r = fit_relatedness(feats["train"], gold["train"], feats["dev"], gold["dev"], feats["test"], config.relatedness,
                        seed)
    return {"devpearson": round(100 * r.devpearson, 2), "pearson": round(100 * pearson(r.predictions, gold["test"]), 2),
            "spearman": round(spearman100(r.predictions, gold["test"]), 2),
            "mse": round(float(np.mean((r.predictions - gold["test"]) ** 2)), 4),
            "ndev": len(gold["dev"]), "ntest": len(gold["test"]), "epochs": r.epochs}


def _run_sts(data, vectors, config, seed, progress) -> Dict[str, Any]:
    """STS12-16 as test_sts.py scores them ("all" pooled; SentEval's "mean" and "wmean"), plus Pearson."""
    preds, golds = {}, {}
    for subset, pairs in data.splits.items():
        u, v = vectors(data, subset)
        preds[subset], golds[subset] = cosine_scores(u, v), np.asarray(pairs.labels, np.float64)
    return aggregate_subsets(preds, golds, with_pearson=True)


_PROTOCOLS = {"inner_kfold": _run_inner_kfold, "kfold": _run_kfold, "split": _run_split,
              "relatedness": _run_relatedness, "sts": _run_sts}

# === Averages ===


def task_score(task: str, result: Dict[str, Any], partition: str = "test") -> float:
    """A task's number in DeCLUTR's averages.

    Test: Spearman for SICK-R and STS-B, the mean of accuracy and F1 for MRPC,
    accuracy otherwise. Dev: dev Pearson for SICK-R and STS-B, dev accuracy
    otherwise (as DeCLUTR's `_compute_aggregate_scores`).
    """
    if partition not in ("dev", "test"):
        raise ValueError(f"partition must be 'dev' or 'test', got {partition!r}.")
    if task in RELATEDNESS_TASKS:
        return float(result["spearman"] if partition == "test" else result["devpearson"])
    if partition == "dev":
        return float(result["devacc"])
    if "f1" in result:
        return float((result["acc"] + result["f1"]) / 2)
    return float(result["acc"])


def senteval_averages(results: Dict[str, Dict[str, Any]]) -> Dict[str, Dict[str, Any]]:
    """DeCLUTR's downstream and probing averages over the tasks present in `results`.

    Returns:
        {"downstream": {...}, "probing": {...}}, each with "test" and "dev"
        (None when no task of the group ran), "tasks" (those averaged) and
        "complete" (all of the group's tasks ran: downstream is CR, MR, MPQA,
        SUBJ, SST2, SST5, TREC, MRPC, SICK-E, SICK-R, STS-B; probing the ten
        probing tasks).
    """
    out = {}
    for group, tasks in (("downstream", DOWNSTREAM_AVERAGE_TASKS), ("probing", PROBING_TASKS)):
        present = [t for t in tasks if t in results]
        out[group] = {
            "test": float(np.mean([task_score(t, results[t], "test") for t in present])) if present else None,
            "dev": float(np.mean([task_score(t, results[t], "dev") for t in present])) if present else None,
            "tasks": present,
            "complete": len(present) == len(tasks),
        }
    return out


# === Evaluation ===


def tasks_to_run(tasks: Optional[Sequence[str]], data_path: str):
    """`tasks.select_tasks`, failing early when a named task's files or every task's files are missing.

    Returns:
        (task names, {skipped task: reason}).

    Raises:
        FileNotFoundError: naming what is missing and pointing to the README.
        UserError: for an unknown task name.
    """
    chosen, skipped = select_tasks(tasks, data_path)
    for task in chosen:
        missing = missing_files(data_path, task)
        if missing:
            raise FileNotFoundError(f"{task}: data file not found: {missing[0]}; {DATA_HELP}.")
    if not chosen:
        missing = "; ".join(f"{task}: {reason}" for task, reason in list(skipped.items())[:3])
        raise FileNotFoundError(f"No SentEval task data under {data_path} ({missing}, ...); {DATA_HELP}.")
    return chosen, skipped


def evaluate_senteval(embed: Embed, data_path: str, tasks: Optional[Sequence[str]] = None,
                      config: SentEvalConfig = CONFIGS["default"], seed: int = 1111,
                      cache: Optional[EmbeddingCache] = None, model_name: str = "model",
                      progress: bool = False) -> Dict[str, Any]:
    """Scores an embedding function on SentEval's tasks.

    Args:
        embed: callable. (sentences, description) -> float [n, dim]; the
            description names the task and split for a progress bar.
        data_path: str. Data root in SentEval's layout (holds `downstream/`, and
            `probing/` if the probing tasks are wanted).
        tasks: sequence of str or None. Task, SentEval or group names (see
            `tasks.select_tasks`); None for every task whose data is present.
        config: SentEvalConfig. Defaults to "default" (kfold 10, Adam).
        seed: int. Folds, initialisation and data order. Defaults to SentEval's 1111.
        cache: EmbeddingCache or None. Reused across calls for the same model;
            a fresh one by default.
        model_name: str. The model's part of the cache key. Defaults to "model".
        progress: bool. Progress bars over the folds of cross-validated tasks.

    Returns:
        {"config", "seed", "tasks": {task: scores, "samples", "seconds"},
         "skipped": {task: reason}, "averages": `senteval_averages`, "embedding_cache", "seconds"}.

    Raises:
        FileNotFoundError: if no task's data is present, or a named task's files are missing.
        UserError: for an unknown task or a malformed data file (naming file and line).
    """
    start = time.time()
    cache = cache if cache is not None else EmbeddingCache()
    chosen, skipped = tasks_to_run(tasks, data_path)
    vectors = _SplitEmbedder(embed, cache, model_name)
    results: Dict[str, Dict[str, Any]] = {}
    for task in chosen:
        task_start = time.time()
        data = load_task(data_path, task)
        result = _PROTOCOLS[TASKS[task].protocol](data, vectors, config, seed, progress)
        result["samples"] = {split: len(part) for split, part in data.splits.items()}
        result["seconds"] = round(time.time() - task_start, 2)
        results[task] = result
        logging.info("SentEval %s: %s", task, {k: v for k, v in result.items() if k != "subsets"})
    return {
        "config": dataclasses.asdict(config),
        "seed": seed,
        "tasks": results,
        "skipped": skipped,
        "averages": senteval_averages(results),
        "embedding_cache": {"hits": cache.hits, "misses": cache.misses},
        "seconds": round(time.time() - start, 2),
    }


def _fmt(value: Optional[float]) -> str:
    return "-" if value is None else f"{value:.2f}"


def format_table(results: Dict[str, Any]) -> str:
    """A plain-text table of `evaluate_senteval`'s results."""
    rows = [f"{'task':<14} {'dev':>7} {'test':>7}  {'notes':<34} {'samples':<20} {'seconds':>8}"]
    for task, r in results["tasks"].items():
        samples = "/".join(str(n) for n in r["samples"].values()) if TASKS[task].protocol != "sts" else str(r["pairs"])
        if TASKS[task].protocol == "sts":
            dev, test = None, r["all"]
            notes = f"all; mean {r['mean']:.2f}, wmean {r['wmean']:.2f}"
        elif task in RELATEDNESS_TASKS:
            dev, test = r["devpearson"], r["spearman"]
            notes = f"Spearman; Pearson {r['pearson']:.2f}, MSE {r['mse']:.3f}"
        else:
            dev, test = r["devacc"], r["acc"]
            notes = f"acc; F1 {r['f1']:.2f}" if "f1" in r else "acc"
        rows.append(f"{task:<14} {_fmt(dev):>7} {_fmt(test):>7}  {notes:<34} {samples:<20} {r['seconds']:8.1f}")
    for group, avg in results["averages"].items():
        if avg["tasks"]:
            note = "all tasks" if avg["complete"] else f"{len(avg['tasks'])} task(s): {','.join(avg['tasks'])}"
            rows.append(f"{'avg ' + group:<14} {_fmt(avg['dev']):>7} {_fmt(avg['test']):>7}  {note}")
    for task, reason in results["skipped"].items():
        rows.append(f"{task:<14} skipped: {reason}")
    return "\n".join(rows)


def seed_spread(runs: Dict[int, Dict[str, Any]]) -> Dict[str, Dict[str, Any]]:
    """Per task, the spread of `task_score` (dev and test) over runs of `evaluate_senteval` with different seeds.

    Args:
        runs: {seed: evaluate_senteval result}, the same tasks in each.

    Returns:
        {task: {"test": {"mean", "std", "min", "max"}, "dev": {...} or None,
        "by_seed": {seed: test score}}}; std is the sample standard deviation
        (0 for one seed). The STS tasks (no classifier, so no seed) are left out.
    """
    def stats(values):
        values = np.asarray(values, np.float64)
        return {"mean": float(values.mean()), "std": float(values.std(ddof=1)) if len(values) > 1 else 0.0,
                "min": float(values.min()), "max": float(values.max())}

    first = next(iter(runs.values()))
    out = {}
    for task in first["tasks"]:
        if TASKS[task].protocol == "sts":
            continue
        tests = {seed: task_score(task, run["tasks"][task], "test") for seed, run in runs.items()}
        devs = [task_score(task, run["tasks"][task], "dev") for run in runs.values()]
        out[task] = {"test": stats(list(tests.values())), "dev": stats(devs), "by_seed": tests}
    return out


def format_spread(spread: Dict[str, Dict[str, Any]]) -> str:
    """A plain-text table of `seed_spread`: test mean, std, min and max per task, then each seed's score."""
    seeds = list(next(iter(spread.values()))["by_seed"]) if spread else []
    rows = [f"{'task':<14} {'mean':>7} {'std':>6} {'min':>7} {'max':>7}  " + " ".join(f"{s:>7}" for s in seeds)]
    for task, r in spread.items():
        t = r["test"]
        rows.append(f"{task:<14} {t['mean']:7.2f} {t['std']:6.2f} {t['min']:7.2f} {t['max']:7.2f}  "
                    + " ".join(f"{r['by_seed'][s]:7.2f}" for s in seeds))
    return "\n".join(rows)
