"""Shared pieces of every method: tokenizer, encoders, pooling, export, artifacts,
STS evaluation, NLI data, sampling, contrastive losses, schedules and the run loop."""

from common.artifacts import new_run_id, write_atomically
from common.bert import BertBackbone, BertConfig, load_hf_weights
from common.contrastive import in_batch_infonce_loss, nt_xent_loss
from common.embedding import embed_sentences
from common.encoder import EncoderConfig, SentenceEncoder, build_encoder
from common.export import export_encoder
from common.nli import NliPairs, read_nli, read_nli_sources
from common.pooling import cls_pool, masked_mean_pool, pool
from common.resolve import Embedder, resolve_model
from common.runs import RunConfig, run_method
from common.sampling import StreamSampler
from common.schedules import WarmupPolynomialDecay
from common.sts import evaluate_sts
from common.tokenization import BertTokenizer, TokenizerConfig, bert_normalize, read_vocabulary

__all__ = [
    "BertBackbone", "BertConfig", "BertTokenizer", "Embedder", "EncoderConfig", "NliPairs", "RunConfig",
    "SentenceEncoder", "StreamSampler", "TokenizerConfig", "WarmupPolynomialDecay", "bert_normalize",
    "build_encoder", "cls_pool", "embed_sentences", "evaluate_sts", "export_encoder", "in_batch_infonce_loss",
    "load_hf_weights", "masked_mean_pool", "new_run_id", "nt_xent_loss", "pool", "read_nli", "read_nli_sources",
    "read_vocabulary", "resolve_model", "run_method", "write_atomically",
]
