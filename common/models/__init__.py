"""Models: the in-graph BERT tokenizer, BERT backbones (Keras from Hugging Face
weights, TF Hub), masked pooling, the sentence encoder and the sources it is built
from (`common.models.sources`: any `--model`), the tied masked-LM head,
SavedModel export, and exports for other ecosystems (sentence-transformers folders, TFLite)."""

from common.models.bert import BertBackbone, BertConfig, hf_state_dict, hf_weight_map, load_hf_weights
from common.models.encoder import EncoderConfig, SentenceEncoder, inference_encoder
from common.models.sources import build_encoder
from common.models.export import export_encoder, export_pair_model, save_encoder_artifact
from common.models.hf_export import write_sentence_transformers
from common.models.masked_lm import MaskedLMHead, mask_tokens, masked_lm_statistics
from common.models.pooling import cls_pool, masked_mean_pool, pool
from common.models.tflite_export import TFLiteEmbedder, tflite_model
from common.models.tokenization import BertTokenizer, TokenizerConfig, bert_normalize, read_vocabulary

__all__ = ["BertBackbone", "BertConfig", "BertTokenizer", "EncoderConfig", "MaskedLMHead", "SentenceEncoder",
           "TFLiteEmbedder", "TokenizerConfig", "bert_normalize", "build_encoder", "cls_pool", "export_encoder",
           "export_pair_model", "hf_state_dict", "hf_weight_map", "inference_encoder", "load_hf_weights", "mask_tokens",
           "masked_lm_statistics", "masked_mean_pool", "pool", "read_vocabulary", "save_encoder_artifact",
           "tflite_model", "write_sentence_transformers"]
