"""Models: the in-graph BERT tokenizer, BERT backbones (Keras from Hugging Face
weights, TF Hub), masked pooling, the sentence encoder and the sources it is built
from (`common.models.sources`: any `--model`), the formats export.py writes and reads back
(`common.models.formats`: one module per format, and their table), and the tied masked-LM
head. What writes a run's SavedModels and runs an export is `common.export`."""

from common.models.bert import BertBackbone
from common.models.bert_config import BertConfig
from common.models.hf_weights import hf_state_dict, hf_weight_map, load_hf_weights
from common.models.encoder import EncoderConfig, SentenceEncoder, build_encoder, inference_encoder
from common.models.masked_lm import MaskedLMHead, mask_tokens, masked_lm_statistics
from common.models.pooling import cls_pool, masked_mean_pool, pool
from common.models.tokenization import BertTokenizer, TokenizerConfig, bert_normalize, read_vocabulary

__all__ = ["BertBackbone", "BertConfig", "BertTokenizer", "EncoderConfig", "MaskedLMHead", "SentenceEncoder",
           "TokenizerConfig", "bert_normalize", "build_encoder", "cls_pool", "hf_state_dict", "hf_weight_map",
           "inference_encoder", "load_hf_weights", "mask_tokens", "masked_lm_statistics", "masked_mean_pool", "pool",
           "read_vocabulary"]
