"""A NumPy BERT (and RoBERTa) forward pass straight from HF safetensors, the reference for tests."""

from __future__ import annotations

import json
import math

import numpy as np
from safetensors.numpy import load_file

_erf = np.vectorize(math.erf)


def _layer_norm(x, gamma, beta, eps):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def _gelu(x, act):
    if act == "gelu":
        return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def _tensors(model_dir: str):
    return {k.removeprefix("bert.").removeprefix("roberta."): v.astype(np.float64)
            for k, v in load_file(f"{model_dir}/model.safetensors").items()}


def _position_ids(cfg, token_ids: np.ndarray) -> np.ndarray:
    """BERT: 0, 1, ...; RoBERTa (HF `create_position_ids_from_input_ids`, from the ids): tokens
    other than the padding token count from pad_token_id + 1, padding sits at pad_token_id."""
    if cfg.get("model_type", "bert") != "roberta":
        return np.broadcast_to(np.arange(token_ids.shape[1]), token_ids.shape)
    pad = cfg.get("pad_token_id", 1)
    real = (token_ids != pad).astype(np.int64)
    return np.cumsum(real, axis=1) * real + pad


def bert_last_hidden(model_dir: str, token_ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """[batch, length, hidden] last hidden states, in float64, for padded int batches."""
    cfg = json.load(open(f"{model_dir}/config.json"))
    t = _tensors(model_dir)
    eps, heads = cfg.get("layer_norm_eps", 1e-12), cfg["num_attention_heads"]
    b, n = token_ids.shape
    x = t["embeddings.word_embeddings.weight"][token_ids]
    x = x + t["embeddings.position_embeddings.weight"][_position_ids(cfg, token_ids)]
    x = x + t["embeddings.token_type_embeddings.weight"][np.zeros_like(token_ids)]
    x = _layer_norm(x, t["embeddings.LayerNorm.weight"], t["embeddings.LayerNorm.bias"], eps)
    hd = x.shape[-1] // heads
    neg = (1.0 - mask[:, None, None, :]) * -1e9
    for i in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{i}."

        def lin(h, name):
            return h @ t[p + name + ".weight"].T + t[p + name + ".bias"]

        def split(h):
            return h.reshape(b, n, heads, hd).transpose(0, 2, 1, 3)

        q, k, v = (split(lin(x, f"attention.self.{m}")) for m in ("query", "key", "value"))
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(hd) + neg
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        probs = scores / scores.sum(-1, keepdims=True)
        ctx = (probs @ v).transpose(0, 2, 1, 3).reshape(b, n, -1)
        x = _layer_norm(x + lin(ctx, "attention.output.dense"),
                        t[p + "attention.output.LayerNorm.weight"], t[p + "attention.output.LayerNorm.bias"], eps)
        h = _gelu(lin(x, "intermediate.dense"), cfg.get("hidden_act", "gelu"))
        x = _layer_norm(x + lin(h, "output.dense"),
                        t[p + "output.LayerNorm.weight"], t[p + "output.LayerNorm.bias"], eps)
    return x


def bert_mean_pooled(model_dir: str, token_ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Masked-mean-pooled last hidden states, in float64."""
    m = mask[:, :, None].astype(np.float64)
    return (bert_last_hidden(model_dir, token_ids, mask) * m).sum(1) / m.sum(1)


def bert_pooler_output(model_dir: str, token_ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """`BertModel`'s `pooler_output`: tanh(pooler.dense([CLS])), in float64."""
    t = _tensors(model_dir)
    cls = bert_last_hidden(model_dir, token_ids, mask)[:, 0]
    return np.tanh(cls @ t["pooler.dense.weight"].T + t["pooler.dense.bias"])


def mlm_logits(model_dir: str, hidden: np.ndarray) -> np.ndarray:
    """A Hugging Face masked-LM head's logits for last hidden states [..., hidden], in float64:
    RoBERTa's `lm_head.*` (exact GELU) or BERT's `cls.predictions.*` (the config's activation),
    the decoder tied to the word embeddings unless the checkpoint holds its own."""
    cfg = json.load(open(f"{model_dir}/config.json"))
    t = _tensors(model_dir)
    if cfg.get("model_type", "bert") == "roberta":
        dense, norm, bias, decoder = "lm_head.dense", "lm_head.layer_norm", "lm_head.bias", "lm_head.decoder"
        act = "gelu"
    else:
        p = "cls.predictions."
        dense, norm, bias, decoder = p + "transform.dense", p + "transform.LayerNorm", p + "bias", p + "decoder"
        act = cfg.get("hidden_act", "gelu")
    x = _gelu(hidden @ t[dense + ".weight"].T + t[dense + ".bias"], act)
    x = _layer_norm(x, t[norm + ".weight"], t[norm + ".bias"], cfg.get("layer_norm_eps", 1e-12))
    return x @ t.get(decoder + ".weight", t["embeddings.word_embeddings.weight"]).T + t[bias]
