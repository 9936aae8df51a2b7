"""Evaluators: what a training run is scored on (`--eval_every`, `--publish_best`) and after.

Every evaluator fills in one contract, `Evaluator` (sentence-transformers' `SentenceEvaluator`):
a `name`, the `primary_metric` it reports (what `--publish_best` selects on unless `--best_metric`
says otherwise), whether that metric is better when greater (`greater_is_better`), and a call that
scores an embedding function (a 1-D tf.string batch -> [batch, dim] embeddings) and returns
{metric name: value}. Evaluators on sentence pairs (`PairsEvaluator`) can also score a
cross-encoder's pair scores (`scores_cross_encoders`), as Trans-Encoder's cross phases need.
Training takes any evaluator and never checks its type; `dev_evaluator` builds the one
`train.py --dev_data` names.

Example:

>>> from common.evaluation.evaluators import ScoredPairsEvaluator
>>> from common.data.sts import PairSet
>>> import numpy as np
>>> pairs = PairSet(["a cat", "a dog", "rain"], ["a cat sits", "a puppy", "sunshine"], np.array([4.5, 3.0, 0.5]))
>>> evaluator = ScoredPairsEvaluator(pairs)
>>> evaluator.primary_metric, evaluator.greater_is_better
('dev_spearman', True)
>>> evaluator.metrics_of(np.array([0.9, 0.7, 0.1]))["dev_spearman"]
100.0
"""

from __future__ import annotations

import abc
import os
from typing import Callable, Dict, Optional

from absl import logging

import numpy as np

from common.data.sts import DEV_TASKS, PairSet, load_stsb
from common.errors import UserError
from common.loading.embedding import embed_sentences, score_sentence_pairs
from common.evaluation.sts import embedding_similarities, pearson100, read_scored_pairs, spearman100



class Evaluator(abc.ABC):
    """The contract of every evaluator.

    Attributes:
        name: str. What it evaluates, for logs and pages (e.g. "STS-B dev").
        primary_metric: str. The key of its headline metric in the returned dict; logged as
            `eval/<primary_metric>` and selected on by `--publish_best`.
        greater_is_better: bool. Whether a higher primary metric is a better model.
        scores_cross_encoders: bool. Whether `score_pairs` / `pair_predictions` work (pair evaluators).

    Example:
        >>> import numpy as np, tensorflow as tf
        >>> from common.evaluation.evaluators import Evaluator
        >>> from common.models import EncoderConfig, build_encoder
        >>> class SpreadEvaluator(Evaluator):  # how far apart two unrelated sentences are
        ...     name, primary_metric, greater_is_better = "spread", "spread_cosine", False
        ...     def __call__(self, embed_fn):
        ...         a, b = np.asarray(embed_fn(tf.constant(["A cat sleeps.", "Stocks fell."])))
        ...         return {"spread_cosine": float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))}
        >>> encoder = build_encoder(EncoderConfig(spec="random_tiny"))
        >>> metrics = SpreadEvaluator()(encoder.embed_strings)
        >>> list(metrics), -1.0 <= metrics["spread_cosine"] <= 1.0
        (['spread_cosine'], True)
    """

    name: str = ""
    primary_metric: str = ""
    greater_is_better: bool = True
    scores_cross_encoders: bool = False

    @abc.abstractmethod
    def __call__(self, embed_fn: Callable) -> Dict[str, float]:
        """Scores a model through its embedding function; {} when its data is missing (logged)."""

    def pair_predictions(self, score_fn: Callable) -> np.ndarray:
        """A cross-encoder's scores of the evaluator's pairs, in order (pair evaluators only)."""
        raise NotImplementedError(f"{type(self).__name__} scores embeddings only, not a cross-encoder's pairs.")

    def metrics_of(self, predictions: np.ndarray) -> Dict[str, float]:
        """The metrics of predicted pair scores (e.g. an ensemble's mean; pair evaluators only)."""
        raise NotImplementedError(f"{type(self).__name__} scores embeddings only, not predicted pair scores.")

    def score_pairs(self, score_fn: Callable) -> Dict[str, float]:
        """The metrics of a cross-encoder's scores of the evaluator's pairs."""
        return self.metrics_of(self.pair_predictions(score_fn))


class PairsEvaluator(Evaluator):
    """An evaluator on sentence pairs: cosine of the embeddings (or a cross-encoder's score) against gold labels.

    Args:
        batch_size: int. Sentences (or pairs) per batch. Defaults to 128.
        progress: bool. Show a progress bar. Defaults to False.
    """

    scores_cross_encoders = True

    def __init__(self, batch_size: int = 128, progress: bool = False):
        self.batch_size, self.progress = batch_size, progress

    @abc.abstractmethod
    def pairs(self) -> Optional[PairSet]:
        """The pairs and their gold labels (None when the data is missing: logged, then nothing is scored)."""

    @abc.abstractmethod
    def metrics_for(self, predictions: np.ndarray, gold: np.ndarray) -> Dict[str, float]:
        """The metrics of predictions against gold labels."""

    def __call__(self, embed_fn: Callable) -> Dict[str, float]:
        pairs = self.pairs()
        if pairs is None:
            return {}
        embed = lambda s: embed_sentences(embed_fn, s, self.batch_size, self.progress, desc=self.name)  # noqa: E731
        return self.metrics_for(embedding_similarities(embed, pairs), pairs.scores)

    def pair_predictions(self, score_fn: Callable) -> np.ndarray:
        pairs = self.pairs()
        if pairs is None:
            return np.zeros(0, np.float32)
        return score_sentence_pairs(score_fn, pairs.sentences1, pairs.sentences2, self.batch_size, self.progress,
                                    desc=self.name)

    def metrics_of(self, predictions: np.ndarray) -> Dict[str, float]:
        pairs = self.pairs()
        if pairs is None or not len(predictions):
            return {}
        return self.metrics_for(np.asarray(predictions), pairs.scores)


class StsbDevEvaluator(PairsEvaluator):
    """Spearman x100 of cosine similarity on STS-B dev: the default validation number of every run.

    Args:
        data_path: str. Data root in SentEval's layout.
        batch_size: int. Sentences per encoding batch. Defaults to 128.
        progress: bool. Show a progress bar while encoding. Defaults to False.

    Example:
        >>> from common.evaluation.evaluators import StsbDevEvaluator
        >>> evaluator = StsbDevEvaluator(data_path="data")  # train.py's --data_path; read when first called
        >>> evaluator.name, evaluator.primary_metric, evaluator.greater_is_better
        ('STS-B dev', 'stsb_dev_spearman', True)
    """

    name = "STS-B dev"
    primary_metric = "stsb_dev_spearman"

    def __init__(self, data_path: str, batch_size: int = 128, progress: bool = False):
        super().__init__(batch_size, progress)
        self.data_path = data_path
        self._pairs: Optional[PairSet] = None

    def pairs(self) -> Optional[PairSet]:
        if self._pairs is None:
            try:
                self._pairs = load_stsb(self.data_path, "dev")
            except FileNotFoundError as e:
                logging.warning("No STS-B dev evaluation: %s", e)
                return None
        return self._pairs

    def metrics_for(self, predictions: np.ndarray, gold: np.ndarray) -> Dict[str, float]:
        return {self.primary_metric: spearman100(predictions, gold)}


class OwnPairsEvaluator(PairsEvaluator):
    """Pairs the user brings (a `--dev_data` file): the pairs in memory, metrics named `<prefix>_<metric>`.

    Args:
        pairs: PairSet. The pairs and their gold labels.
        prefix: str. The metrics' prefix. Defaults to "dev".
        batch_size: int. Defaults to 128.
        progress: bool. Defaults to False.
    """

    what = "pairs"  # the evaluator's name after the prefix
    metric = ""  # the primary metric after the prefix

    def __init__(self, pairs: PairSet, prefix: str = "dev", batch_size: int = 128, progress: bool = False):
        super().__init__(batch_size, progress)
        self._pairs, self.prefix = pairs, prefix
        self.name = f"{prefix} {self.what}"
        self.primary_metric = f"{prefix}_{self.metric}"

    def pairs(self) -> PairSet:
        return self._pairs


class ScoredPairsEvaluator(OwnPairsEvaluator):
    """Your own pairs with similarity scores: Spearman and Pearson x100 of cosine similarity (`OwnPairsEvaluator`'s
    arguments; the pairs e.g. from `common.evaluation.sts.read_scored_pairs`).

    Example:
        >>> import numpy as np
        >>> from common.data.sts import PairSet
        >>> from common.evaluation.evaluators import ScoredPairsEvaluator
        >>> from common.models import EncoderConfig, build_encoder
        >>> pairs = PairSet(["a cat", "a dog", "rain"], ["a cat sits", "a puppy", "sunshine"],
        ...                 np.array([4.5, 3.0, 0.5]))  # or read_scored_pairs("my_pairs.csv")
        >>> evaluator = ScoredPairsEvaluator(pairs, prefix="val")
        >>> sorted(evaluator(build_encoder(EncoderConfig(spec="random_tiny")).embed_strings))
        ['val_pearson', 'val_spearman']
    """

    what, metric = "pairs", "spearman"

    def metrics_for(self, predictions: np.ndarray, gold: np.ndarray) -> Dict[str, float]:
        return {self.primary_metric: spearman100(predictions, gold),
                f"{self.prefix}_pearson": pearson100(predictions, gold)}


class BinaryPairsEvaluator(OwnPairsEvaluator):
    """Your own pairs with 0/1 labels (paraphrase, duplicate): average precision of the cosine similarity, and
    accuracy, F1, precision and recall at their best cosine thresholds, as sentence-transformers'
    `BinaryClassificationEvaluator` computes them (`common.evaluation.binary`); fractions in [0, 1]
    (`OwnPairsEvaluator`'s arguments).

    Example:
        >>> import numpy as np
        >>> from common.data.sts import PairSet
        >>> from common.evaluation.evaluators import BinaryPairsEvaluator
        >>> pairs = PairSet(["a cat", "a dog", "rain", "snow"], ["a kitten", "a car", "sunshine", "snowfall"],
        ...                 np.array([1, 0, 0, 1]))
        >>> evaluator = BinaryPairsEvaluator(pairs)
        >>> evaluator.primary_metric
        'dev_average_precision'
        >>> metrics = evaluator.metrics_of(np.array([0.9, 0.2, 0.1, 0.8]))  # or evaluator(encoder.embed_strings)
        >>> metrics["dev_average_precision"], metrics["dev_accuracy"]
        (1.0, 1.0)
    """

    what, metric = "binary pairs", "average_precision"

    def metrics_for(self, predictions: np.ndarray, gold: np.ndarray) -> Dict[str, float]:
        from common.evaluation.binary import METRICS, THRESHOLDS, binary_pair_metrics

        found = binary_pair_metrics(predictions, gold)
        names = [*METRICS, *THRESHOLDS.values()]  # not the counts of pairs and positives
        return {f"{self.prefix}_{name}": float(found[name]) for name in names}


class RetrievalEvaluator(Evaluator):
    """Retrieval on a BEIR folder's split by exact cosine search (`common.evaluation.retrieval`): nDCG@10 and the
    other retrieval metrics, as fractions.

    Args:
        dataset: RetrievalSet. From `common.evaluation.retrieval.load_beir`.
        prefix: str. The metrics' prefix. Defaults to "dev".
        progress: bool. Defaults to False.
    """

    greater_is_better = True

    def __init__(self, dataset, prefix: str = "dev", progress: bool = False):
        self.dataset, self.prefix, self.progress = dataset, prefix, progress
        self.name = f"{prefix} retrieval"
        self.primary_metric = f"{prefix}_ndcg_at_10"

    def __call__(self, embed_fn: Callable) -> Dict[str, float]:
        from common.evaluation.retrieval import METRICS, evaluate_retrieval

        embed = lambda texts: embed_sentences(embed_fn, texts, 128, self.progress, desc=self.name)  # noqa: E731
        found = evaluate_retrieval(embed, self.dataset, progress=self.progress)
        # TensorBoard tags allow no "@": ndcg@10 is logged as <prefix>_ndcg_at_10.
        return {f"{self.prefix}_{name.replace('@', '_at_')}": float(found[name]) for name in METRICS}


def pair_task(pairs: PairSet) -> str:
    """ "binary" when the labels take exactly the values 0 and 1, else "scored"."""
    values = set(np.unique(pairs.scores).tolist())
    return "binary" if values == {0.0, 1.0} else "scored"


def dev_evaluator(data_path: str, dev_data: str = "", dev_task: str = "auto",
                  dev_columns: Optional[Dict[str, str]] = None) -> Evaluator:
    """The evaluator `train.py` gives a run: STS-B dev, or your own held-out data (`--dev_data`).

    Args:
        data_path: str. The data root (STS-B dev, when `dev_data` is empty).
        dev_data: str. A pair file (CSV, TSV, JSONL, Parquet: sentence1, sentence2, score or 0/1 label) or a
            BEIR folder (corpus.jsonl, queries.jsonl, qrels/dev.tsv). Defaults to "" (STS-B dev).
        dev_task: str. One of DEV_TASKS. Defaults to "auto".
        dev_columns: dict or None. Field -> column of a pair file.

    Returns:
        The Evaluator.

    Raises:
        UserError: for a task that does not fit the data, or unreadable data (naming what to do).
    """
    if dev_task not in DEV_TASKS:
        raise UserError(f"--dev_task must be one of {', '.join(DEV_TASKS)}; got {dev_task!r}.")
    if not dev_data:
        if dev_task != "auto":
            raise UserError(f"--dev_task={dev_task} describes --dev_data, which is not given; give --dev_data=<pair "
                             "file or BEIR folder>, or leave --dev_task out to evaluate on STS-B dev.")
        return StsbDevEvaluator(data_path)
    import tensorflow as tf

    if not tf.io.gfile.exists(dev_data):
        raise UserError(f"--dev_data={dev_data}: no such file or folder; give a pair file (sentence1, sentence2, "
                         "score or 0/1 label) or a BEIR folder (corpus.jsonl, queries.jsonl, qrels/dev.tsv).")
    if tf.io.gfile.isdir(dev_data) and not os.path.splitext(dev_data.rstrip("/"))[1]:
        if dev_task not in ("auto", "retrieval"):
            raise UserError(f"--dev_data={dev_data} is a folder, which is read as a BEIR retrieval set; "
                             f"--dev_task={dev_task} needs a pair file.")
        from common.evaluation.retrieval import load_beir

        return RetrievalEvaluator(load_beir(dev_data, "dev"))
    if dev_task == "retrieval":
        raise UserError(f"--dev_task=retrieval needs a BEIR folder (corpus.jsonl, queries.jsonl, qrels/dev.tsv); "
                         f"--dev_data={dev_data} is a file.")
    pairs = read_scored_pairs(dev_data, dev_columns)
    found = pair_task(pairs)
    task = found if dev_task == "auto" else dev_task
    if task == "binary":
        if found != "binary":
            values = ", ".join(f"{v:g}" for v in np.unique(pairs.scores)[:6])
            raise UserError(f"--dev_task=binary needs labels 0 and 1; {dev_data} has {values}"
                             f"{' ...' if len(np.unique(pairs.scores)) > 6 else ''}; give --dev_task=scored for "
                             "similarity scores.")
        return BinaryPairsEvaluator(pairs)
    return ScoredPairsEvaluator(pairs)
