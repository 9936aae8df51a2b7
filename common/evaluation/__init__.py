"""Evaluation: STS (test_sts.py), SentEval (senteval_eval.py), clustering
(cluster_eval.py), retrieval on the BEIR layout (retrieval_eval.py), batched embedding,
and the evaluators a training run is given. What `--model` names is resolved in
`common.loading`, which also embeds in batches (`embed_sentences`, named here too)."""

from common.evaluation.evaluators import StsbDevEvaluator
from common.evaluation.retrieval import evaluate_retrieval, load_beir, retrieval_metrics, write_beir
from common.evaluation.sts import aggregate_subsets, evaluate_sts, pairs_spearman, spearman100
from common.loading.embedding import embed_sentences

__all__ = ["StsbDevEvaluator", "aggregate_subsets", "embed_sentences", "evaluate_sts",
           "evaluate_retrieval", "load_beir", "pairs_spearman", "retrieval_metrics",
           "spearman100", "write_beir"]
