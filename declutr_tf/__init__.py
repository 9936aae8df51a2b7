"""DeCLUTR (Giorgi et al., ACL 2021): contrastive learning of sentence embeddings
from spans of the same document, with MLM on the anchors.

`declutr_tf.method` registers the method (`train.py --method=declutr`).
"""

from declutr_tf.config import DeclutrOptions
from declutr_tf.documents import Documents, SpanAdvice, describe_lengths, read_documents, span_batches, suggest_spans
from declutr_tf.model import DeclutrModel
from declutr_tf.span_sampling import SpanConfig, sample_spans

__all__ = ["DeclutrModel", "DeclutrOptions", "Documents", "SpanAdvice", "SpanConfig", "describe_lengths",
           "read_documents", "sample_spans", "span_batches", "suggest_spans"]
