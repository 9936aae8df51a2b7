"""Evaluation: STS (test_sts.py), SentEval (senteval_eval.py), clustering
(cluster_eval.py), retrieval on the BEIR layout (retrieval_eval.py), batched embedding,
`--model` resolution, and the evaluators a training run is given."""

from common.evaluation.embedding import embed_sentences
from common.evaluation.evaluators import StsbDevEvaluator
from common.evaluation.resolve import Embedder, resolve_model
from common.evaluation.retrieval import evaluate_retrieval, load_beir, retrieval_metrics, write_beir
from common.evaluation.sts import aggregate_subsets, evaluate_sts, pairs_spearman, spearman100

__all__ = ["Embedder", "StsbDevEvaluator", "aggregate_subsets", "embed_sentences", "evaluate_sts",
           "evaluate_retrieval", "load_beir", "pairs_spearman", "resolve_model", "retrieval_metrics",
           "spearman100", "write_beir"]
