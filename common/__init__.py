"""Shared pieces of every method: tokenizer, encoders, pooling, export, artifacts, STS."""

from common.artifacts import new_run_id, write_atomically
from common.bert import BertBackbone, BertConfig, load_hf_weights
from common.embedding import embed_sentences
from common.encoder import EncoderConfig, SentenceEncoder, build_encoder
from common.export import export_encoder
from common.pooling import cls_pool, masked_mean_pool, pool
from common.resolve import Embedder, resolve_model
from common.sts import evaluate_sts
from common.tokenization import BertTokenizer, TokenizerConfig, bert_normalize, read_vocabulary

__all__ = [
    "BertBackbone", "BertConfig", "BertTokenizer", "Embedder", "EncoderConfig", "SentenceEncoder",
    "TokenizerConfig", "bert_normalize", "build_encoder", "cls_pool", "embed_sentences", "evaluate_sts",
    "export_encoder", "load_hf_weights", "masked_mean_pool", "new_run_id", "pool", "read_vocabulary",
    "resolve_model", "write_atomically",
]
