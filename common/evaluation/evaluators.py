"""Evaluators that a training run is given (training itself imports none).

An evaluator is called with the encoder's embedding function (a 1-D tf.string
batch -> [batch, dim] embeddings) and returns {metric name: value}.
"""

from __future__ import annotations

from typing import Dict

from absl import logging

from common.data.sts import load_stsb
from common.evaluation.embedding import embed_sentences
from common.evaluation.sts import pairs_spearman


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
