"""PAUSE (Cao et al., EMNLP 2021): positive-unlabelled sentence embeddings from NLI."""

from pause_tf.annealing import pu_weight
from pause_tf.config import PauseConfig
from pause_tf.losses import labelled_cross_entropy, nnpu_loss, pause_loss
from pause_tf.model import PauseModel, SiameseModel, StsbModel
from pause_tf.pu_data import pu_batches, pu_split

__all__ = ["PauseConfig", "PauseModel", "SiameseModel", "StsbModel", "labelled_cross_entropy", "nnpu_loss",
           "pause_loss", "pu_batches", "pu_split", "pu_weight"]
