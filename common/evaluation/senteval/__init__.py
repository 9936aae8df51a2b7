"""SentEval (Conneau & Kiela, LREC 2018) in NumPy/scikit-learn: tasks, classifier, evaluation."""

from common.evaluation.senteval.cache import EmbeddingCache
from common.evaluation.senteval.classifier import (L2_REGS, FittedClassifier, ValidationResult, fit_relatedness,
                                                   inner_kfold_validation, kfold_validation, relatedness_targets,
                                                   split_validation, stratified_folds, train_classifiers)
from common.evaluation.senteval.configs import CONFIGS, ClassifierConfig, RelatednessConfig, SentEvalConfig, get_config
from common.evaluation.senteval.evaluate import (DOWNSTREAM_AVERAGE_TASKS, PROBING_TASKS, evaluate_senteval,
                                                 format_table, nli_features, pair_features, senteval_averages,
                                                 task_score, tasks_to_run)
from common.evaluation.senteval.tasks import (GROUPS, TASKS, PairSplit, SentenceSplit, TaskData, TaskSpec,
                                              canonical_task_name, load_task, select_tasks)

__all__ = [
    "CONFIGS", "DOWNSTREAM_AVERAGE_TASKS", "GROUPS", "L2_REGS", "PROBING_TASKS", "TASKS", "ClassifierConfig",
    "EmbeddingCache", "FittedClassifier", "PairSplit", "RelatednessConfig", "SentEvalConfig", "SentenceSplit",
    "TaskData", "TaskSpec", "ValidationResult", "canonical_task_name", "evaluate_senteval", "fit_relatedness",
    "format_table", "get_config", "inner_kfold_validation", "kfold_validation", "load_task", "nli_features",
    "pair_features", "relatedness_targets", "select_tasks", "senteval_averages", "split_validation",
    "stratified_folds", "task_score", "tasks_to_run", "train_classifiers",
]
