"""DeCLUTR (Giorgi et al., ACL 2021): contrastive learning of sentence embeddings
from spans of the same document, with MLM on the anchors."""

from declutr_tf.config import DeclutrConfig
from declutr_tf.documents import Documents, read_documents, span_batches
from declutr_tf.mlm import MaskedLMHead, mask_tokens
from declutr_tf.model import DeclutrModel
from declutr_tf.span_sampling import SpanConfig, sample_spans

__all__ = ["DeclutrConfig", "DeclutrModel", "Documents", "MaskedLMHead", "SpanConfig", "mask_tokens",
           "read_documents", "sample_spans", "span_batches"]
