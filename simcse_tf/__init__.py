"""SimCSE (Gao et al., EMNLP 2021): unsupervised (dropout noise) and supervised
(NLI with hard negatives) contrastive sentence embeddings, on the shared machinery.

`simcse_tf.method` registers the method (`train.py --method=simcse`).
"""

from simcse_tf.config import SimcseOptions
from simcse_tf.data import read_sentences, read_triples
from simcse_tf.model import SimcseModel

__all__ = ["SimcseModel", "SimcseOptions", "read_sentences", "read_triples"]
