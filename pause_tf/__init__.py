"""PAUSE (Cao et al., EMNLP 2021): positive-unlabelled sentence embeddings from NLI.

`pause_tf.method` registers the method (`train.py --method=pause`).
"""

from pause_tf.annealing import pu_weight
from pause_tf.config import PauseOptions
from pause_tf.losses import labelled_cross_entropy, nnpu_loss, pause_loss
from pause_tf.model import PauseModel, SiameseModel, StsbModel
from pause_tf.pu_data import pu_batches, pu_split

__all__ = ["PauseModel", "PauseOptions", "SiameseModel", "StsbModel", "labelled_cross_entropy", "nnpu_loss",
           "pause_loss", "pu_batches", "pu_split", "pu_weight"]
