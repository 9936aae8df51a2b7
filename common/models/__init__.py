"""Models: the in-graph BERT tokenizer, BERT backbones (Keras from Hugging Face
weights, TF Hub), masked pooling, the sentence encoder, the tied masked-LM head,
and SavedModel export."""

from common.models.bert import BertBackbone, BertConfig, load_hf_weights
from common.models.encoder import EncoderConfig, SentenceEncoder, build_encoder
from common.models.export import export_encoder, export_pair_model, save_encoder_artifact
from common.models.masked_lm import MaskedLMHead, mask_tokens, masked_lm_statistics
from common.models.pooling import cls_pool, masked_mean_pool, pool
from common.models.tokenization import BertTokenizer, TokenizerConfig, bert_normalize, read_vocabulary

__all__ = ["BertBackbone", "BertConfig", "BertTokenizer", "EncoderConfig", "MaskedLMHead", "SentenceEncoder",
           "TokenizerConfig", "bert_normalize", "build_encoder", "cls_pool", "export_encoder", "export_pair_model",
           "load_hf_weights", "mask_tokens", "masked_lm_statistics", "masked_mean_pool", "pool", "read_vocabulary",
           "save_encoder_artifact"]
