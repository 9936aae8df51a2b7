"""SimCSE (Gao et al., EMNLP 2021): unsupervised (dropout noise) and supervised
(NLI with hard negatives) contrastive sentence embeddings, on the shared machinery."""

from simcse_tf.config import SimcseConfig
from simcse_tf.model import SimcseModel

__all__ = ["SimcseConfig", "SimcseModel"]
