"""TF-Hub-format BERTs: a TF Hub or Kaggle handle, the original PAUSE code's "tfhub_bert_small" and
"tfhub_bert_base", or a local / `gs://` SavedModel with the TF Hub BERT signature."""

from __future__ import annotations

from common.errors import UserError
from common.models import precision as precision_lib
from common.models.encoder_config import EncoderConfig
from common.models.hub_backbone import TFHUB_HANDLES, HubBertBackbone, is_hub_handle
from common.models.sources.parts import Parts
from common.models.tokenization import BertTokenizer, TokenizerConfig, read_vocabulary

__all__ = ["TFHUB_HANDLES", "is_hub_handle", "load"]


def load(handle: str, config: EncoderConfig) -> Parts:
    """The TF Hub BERT at `handle` (a URL or a SavedModel directory); its graph computes in float32."""
    if precision_lib.is_mixed(config.precision):
        raise UserError(f"--precision={config.precision} needs a BERT built by this toolkit (minilm, a Hugging Face "
                         f"BERT directory, a fresh BERT or a train.py run); {config.spec} is a TF-Hub SavedModel, "
                         "whose graph computes in float32: use --precision=fp32.")
    backbone = HubBertBackbone(handle, name="backbone")
    vocabulary, lowercase = read_vocabulary(backbone.vocabulary_path()), backbone.do_lower_case()

    def tokenizer(max_seq_len: int) -> BertTokenizer:
        return BertTokenizer(vocabulary, TokenizerConfig(max_seq_len=max_seq_len, lowercase=lowercase,
                                                         pad_to_multiple_of=config.pad_to_multiple_of))

    return Parts(backbone, tokenizer)
