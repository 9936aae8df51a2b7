"""Evaluators that a training run is given (training itself imports none).

An evaluator is called with the encoder's embedding function (a 1-D tf.string
batch -> [batch, dim] embeddings) and returns {metric name: value}. One that can
also score a cross-encoder has `score_pairs(score_fn)`, with score_fn a
(sentences1, sentences2) -> [batch] scores function.
"""

from __future__ import annotations

from typing import Dict

from absl import logging

import numpy as np

from common.data.sts import load_stsb
from common.evaluation.embedding import embed_sentences, score_sentence_pairs
from common.evaluation.sts import pairs_spearman, spearman100


class StsbDevEvaluator:
    """Spearman x100 of cosine similarity on STS-B dev: the validation number of every run.

    Args:
        data_path: str. Data root in SentEval's layout.
        batch_size: int. Sentences per encoding batch. Defaults to 128.
        progress: bool. Show a progress bar while encoding. Defaults to True.
    """

    name = "stsb_dev_spearman"

    def __init__(self, data_path: str, batch_size: int = 128, progress: bool = True):
        self.data_path = data_path
        self.batch_size = batch_size
        self.progress = progress

    def __call__(self, embed_fn) -> Dict[str, float]:
        try:
            pairs = load_stsb(self.data_path, "dev")
        except FileNotFoundError as e:
            logging.warning("No STS-B dev evaluation: %s", e)
            return {}
        embed = lambda s: embed_sentences(embed_fn, s, self.batch_size, self.progress, desc="STS-B dev")  # noqa: E731
        return {self.name: pairs_spearman(embed, pairs)}

    def pair_predictions(self, score_fn) -> np.ndarray:
        """A cross-encoder's scores of the STS-B dev pairs, in file order (empty without the data)."""
        try:
            pairs = load_stsb(self.data_path, "dev")
        except FileNotFoundError as e:
            logging.warning("No STS-B dev evaluation: %s", e)
            return np.zeros(0, np.float32)
        return score_sentence_pairs(score_fn, pairs.sentences1, pairs.sentences2, self.batch_size,
                                    self.progress, desc="STS-B dev")

    def spearman_of(self, predictions: np.ndarray) -> Dict[str, float]:
        """Spearman x100 of predictions of the STS-B dev pairs (in file order), e.g. an ensemble's mean."""
        if not len(predictions):
            return {}
        return {self.name: spearman100(predictions, load_stsb(self.data_path, "dev").scores)}

    def score_pairs(self, score_fn) -> Dict[str, float]:
        """Spearman x100 of a cross-encoder's scores on STS-B dev."""
        return self.spearman_of(self.pair_predictions(score_fn))
