"""Evaluation: STS (test_sts.py), SentEval (senteval_eval.py), clustering
(cluster_eval.py), batched embedding, `--model` resolution, and the evaluators a
training run is given."""

from common.evaluation.embedding import embed_sentences
from common.evaluation.evaluators import StsbDevEvaluator
from common.evaluation.resolve import Embedder, resolve_model
from common.evaluation.sts import aggregate_subsets, evaluate_sts, pairs_spearman, spearman100

__all__ = ["Embedder", "StsbDevEvaluator", "aggregate_subsets", "embed_sentences", "evaluate_sts",
           "pairs_spearman", "resolve_model", "spearman100"]
