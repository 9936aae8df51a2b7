"""Masked-LM pretraining of a BERT (Devlin et al., NAACL 2019) on raw documents:
the toolkit's own way to a raw pretrained BERT when none can be downloaded.

`mlm_tf.method` registers the method (`train.py --method=mlm`).
"""

from mlm_tf.config import MlmOptions
from mlm_tf.data import Books, pack_windows, read_books, split_books
from mlm_tf.model import MlmModel

__all__ = ["Books", "MlmModel", "MlmOptions", "pack_windows", "read_books", "split_books"]
