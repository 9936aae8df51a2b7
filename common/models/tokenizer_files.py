"""A tokenizer's files as Hugging Face's `tokenizers` and `transformers` read them.

    vocab.txt                   WordPiece's vocabulary (a RoBERTa tokenizer: vocab.json and merges.txt)
    tokenizer.json              the fast tokenizer: normalizer, pre-tokenizer, model and the
                                [CLS] a [SEP] (<s> a </s>) framing, the rules the in-graph tokenizers
                                reproduce, so Hugging Face's fast tokenizer gives the same ids (tested)
    tokenizer_config.json, special_tokens_map.json

Written beside every export a Hugging Face tokenizer reads: the sentence-transformers folder and the
ONNX and OpenVINO exports (`common.models.formats`).
"""

from __future__ import annotations

import json
from typing import Any, Dict, List

import tensorflow as tf

from common import artifacts
from common.models.bpe_tokenization import ROBERTA_SPECIAL_TOKENS, ByteLevelBpeTokenizer
from common.models.tokenization import SPECIAL_TOKENS


def write_json(path: str, value: Any) -> None:
    with tf.io.gfile.GFile(path, "w") as f:
        json.dump(value, f, indent=2, ensure_ascii=False)
        f.write("\n")


def tokenizer_json(vocabulary: List[str], lowercase: bool) -> Dict[str, Any]:
    """The `tokenizers` library's file for a BERT WordPiece tokenizer over `vocabulary`.

    Its BertNormalizer, BertPreTokenizer and WordPiece model are the rules the in-graph
    tokenizer reproduces (`common/models/tokenization.py`), so Hugging Face's fast
    tokenizer gives the same ids (tested). No truncation or padding is set:
    sentence-transformers truncates at `sentence_bert_config.json`'s `max_seq_length`.
    """
    index = {token: i for i, token in enumerate(vocabulary)}
    special = [{"id": index[t], "content": t, "single_word": False, "lstrip": False, "rstrip": False,
                "normalized": False, "special": True} for t in SPECIAL_TOKENS]

    def token(name: str, type_id: int = 0):
        return {"SpecialToken": {"id": name, "type_id": type_id}}

    def sequence(name: str, type_id: int):
        return {"Sequence": {"id": name, "type_id": type_id}}

    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": sorted(special, key=lambda t: t["id"]),
        "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                       "strip_accents": None, "lowercase": lowercase},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [token("[CLS]"), sequence("A", 0), token("[SEP]")],
            "pair": [token("[CLS]"), sequence("A", 0), token("[SEP]"), sequence("B", 1), token("[SEP]", 1)],
            "special_tokens": {t: {"id": t, "ids": [index[t]], "tokens": [t]} for t in ("[CLS]", "[SEP]")},
        },
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 100, "vocab": index},
    }


def bpe_tokenizer_json(tokenizer: ByteLevelBpeTokenizer) -> Dict[str, Any]:
    """The `tokenizers` library's file for RoBERTa's byte-level BPE tokenizer: ByteLevel
    pre-tokenizer without a prefix space, BPE over `vocab.json`/`merges.txt`, and
    RobertaProcessing's `<s> a </s>` / `<s> a </s></s> b </s>` framing, the rules
    `common/models/bpe_tokenization.py` reproduces (tested equal)."""
    index = {token: i for i, token in enumerate(tokenizer.vocabulary)}
    special = [{"id": index[t], "content": t, "single_word": False, "lstrip": t == "<mask>", "rstrip": False,
                "normalized": False, "special": True} for t in ROBERTA_SPECIAL_TOKENS.values()]
    byte_level = {"add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": sorted(special, key=lambda t: t["id"]),
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", **byte_level},
        "post_processor": {"type": "RobertaProcessing", "sep": ["</s>", tokenizer.sep_id],
                           "cls": ["<s>", tokenizer.cls_id], "trim_offsets": True, "add_prefix_space": False},
        "decoder": {"type": "ByteLevel", **byte_level},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "vocab": index,
                  "merges": list(tokenizer.merges)},
    }


def write_tokenizer_files(tokenizer, path: str, max_seq_len: int) -> None:
    """The tokenizer's files: WordPiece's vocab.txt, or byte-level BPE's vocab.json and merges.txt;
    tokenizer.json, tokenizer_config.json and special_tokens_map.json for either."""
    if isinstance(tokenizer, ByteLevelBpeTokenizer):
        write_json(artifacts.join(path, "vocab.json"), {t: i for i, t in enumerate(tokenizer.vocabulary)})
        with tf.io.gfile.GFile(artifacts.join(path, "merges.txt"), "w") as f:
            f.write("#version: 0.2\n" + "".join(m + "\n" for m in tokenizer.merges))
        write_json(artifacts.join(path, "tokenizer.json"), bpe_tokenizer_json(tokenizer))
        r = ROBERTA_SPECIAL_TOKENS
        names = {"bos_token": r["cls"], "eos_token": r["sep"], "unk_token": r["unk"], "sep_token": r["sep"],
                 "pad_token": r["pad"], "cls_token": r["cls"], "mask_token": r["mask"]}
        write_json(artifacts.join(path, "special_tokens_map.json"), names)
        write_json(artifacts.join(path, "tokenizer_config.json"), {
            "tokenizer_class": "RobertaTokenizer", "add_prefix_space": False, "trim_offsets": True,
            "errors": "replace", "clean_up_tokenization_spaces": False, "model_max_length": max_seq_len, **names})
        return
    with tf.io.gfile.GFile(artifacts.join(path, "vocab.txt"), "w") as f:
        f.write("".join(token + "\n" for token in tokenizer.vocabulary))
    lowercase = tokenizer.config.lowercase
    write_json(artifacts.join(path, "tokenizer.json"), tokenizer_json(tokenizer.vocabulary, lowercase))
    names = {"unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]", "cls_token": "[CLS]",
             "mask_token": "[MASK]"}
    write_json(artifacts.join(path, "special_tokens_map.json"), names)
    write_json(artifacts.join(path, "tokenizer_config.json"), {
        "tokenizer_class": "BertTokenizer", "do_lower_case": lowercase, "tokenize_chinese_chars": True,
        "strip_accents": None, "clean_up_tokenization_spaces": True, "model_max_length": max_seq_len,
        **names})
