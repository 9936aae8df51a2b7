"""Small data files in SentEval's layout, written by tests."""

from __future__ import annotations

import os

from common.data.sts import STS_SUBSETS

PAIRS = [
    ("a man is playing a guitar .", "a man plays the guitar .", "4.8"),
    ("a woman is slicing an onion .", "a man is dancing .", "0.2"),
    ("the cat sits on the mat .", "a cat is sitting on a mat .", "4.5"),
    ("stocks fell sharply on monday .", "the market dropped on monday .", "3.6"),
    ("a dog runs in the park .", "it is raining in london .", "0.0"),
    ("children play football outside .", "kids are playing soccer outdoors .", "4.4"),
]


def write_sts_root(root: str) -> str:
    """Writes every STS12-16 subset, STS-B train/dev/test and SICK test with 6 pairs each
    (one extra unscored pair per STS subset, as in STS15/16)."""
    for year, subsets in STS_SUBSETS.items():
        d = os.path.join(root, "downstream", "STS", f"{year.upper()}-en-test")
        os.makedirs(d, exist_ok=True)
        for name in subsets:
            with open(os.path.join(d, f"STS.input.{name}.txt"), "w") as f:
                f.writelines(f"{a}\t{b}\n" for a, b, _ in PAIRS)
                f.write("an unscored pair .\tnobody rated it .\n")
            with open(os.path.join(d, f"STS.gs.{name}.txt"), "w") as f:
                f.writelines(f"{s}\n" for _, _, s in PAIRS)
                f.write("\n")
    d = os.path.join(root, "downstream", "STS", "STSBenchmark")
    os.makedirs(d, exist_ok=True)
    for split in ("train", "dev", "test"):
        with open(os.path.join(d, f"sts-{split}.csv"), "w") as f:
            f.writelines(f"main-captions\tMSRvid\t2012test\t{i:04d}\t{s}\t{a}\t{b}\n"
                         for i, (a, b, s) in enumerate(PAIRS))
    d = os.path.join(root, "downstream", "SICK")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "SICK_test_annotated.txt"), "w") as f:
        f.write("pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment\n")
        f.writelines(f"{i}\t{a}\t{b}\t{float(s) + 0.1:.1f}\tNEUTRAL\n" for i, (a, b, s) in enumerate(PAIRS))
    return root


def _random_hf_bert_tensors(seed: int, vocab_size: int, h: int, inter: int, layers: int, positions: int,
                            token_types: int):
    """BertModel's (and RobertaModel's) tensors, un-prefixed Hugging Face names, random N(0, 0.2)
    (LayerNorm scales around 1), drawn in a fixed order from `seed`."""
    import numpy as np

    rng = np.random.default_rng(seed)

    def r(*shape, scale=0.2):
        return (rng.normal(size=shape) * scale).astype(np.float32)

    t = {"embeddings.word_embeddings.weight": r(vocab_size, h),
         "embeddings.position_embeddings.weight": r(positions, h),
         "embeddings.token_type_embeddings.weight": r(token_types, h),
         "embeddings.LayerNorm.weight": 1 + r(h), "embeddings.LayerNorm.bias": r(h),
         "pooler.dense.weight": r(h, h), "pooler.dense.bias": r(h)}
    for i in range(layers):
        p = f"encoder.layer.{i}."
        for m in ("query", "key", "value"):
            t[p + f"attention.self.{m}.weight"], t[p + f"attention.self.{m}.bias"] = r(h, h), r(h)
        t[p + "attention.output.dense.weight"], t[p + "attention.output.dense.bias"] = r(h, h), r(h)
        t[p + "attention.output.LayerNorm.weight"], t[p + "attention.output.LayerNorm.bias"] = 1 + r(h), r(h)
        t[p + "intermediate.dense.weight"], t[p + "intermediate.dense.bias"] = r(inter, h), r(inter)
        t[p + "output.dense.weight"], t[p + "output.dense.bias"] = r(h, inter), r(h)
        t[p + "output.LayerNorm.weight"], t[p + "output.LayerNorm.bias"] = 1 + r(h), r(h)
    return t


def write_hf_bert_dir(path: str, vocab_path: str, hidden_act: str = "gelu", seed: int = 0) -> str:
    """A tiny random BERT in Hugging Face's format (config.json, model.safetensors, vocab.txt)."""
    import json
    import shutil

    from safetensors.numpy import save_file

    os.makedirs(path, exist_ok=True)
    shutil.copy(vocab_path, os.path.join(path, "vocab.txt"))
    with open(vocab_path, encoding="utf-8") as f:
        vocab_size = sum(1 for _ in f)
    h, inter, layers = 32, 64, 2
    cfg = {"model_type": "bert", "vocab_size": vocab_size, "hidden_size": h, "num_hidden_layers": layers,
           "num_attention_heads": 4, "intermediate_size": inter, "hidden_act": hidden_act,
           "max_position_embeddings": 64, "type_vocab_size": 2, "layer_norm_eps": 1e-12}
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump(cfg, f)
    t = _random_hf_bert_tensors(seed, vocab_size, h, inter, layers, positions=64, token_types=2)
    save_file({"bert." + k: v for k, v in t.items()}, os.path.join(path, "model.safetensors"))
    return path


def write_tfhub_bert(path: str, backbone, vocab_path: str) -> str:
    """Saves a Keras BertBackbone as a TF-Hub-format BERT encoder SavedModel (uncased):
    `__call__({"input_word_ids", "input_mask", "input_type_ids"}, training)` ->
    {"sequence_output", "pooled_output", "default"}, with `vocab_file`, `do_lower_case`,
    `variables` and `trainable_variables` like the published TF Hub BERTs."""
    from common.models.formats.tfhub_bert import save_tfhub_bert
    from common.models.tokenization import read_vocabulary

    save_tfhub_bert(backbone, read_vocabulary(vocab_path), True, path)
    return path


NLI_ROWS = [
    ("a man plays a guitar .", "a person makes music .", "entailment"),
    ("a man plays a guitar .", "nobody is playing .", "contradiction"),
    ("a man plays a guitar .", "the man is famous .", "neutral"),
    ("two dogs run on grass .", "animals are outside .", "entailment"),
    ("two dogs run on grass .", "the dogs are asleep .", "contradiction"),
    ("two dogs run on grass .", "the dogs are brothers .", "neutral"),
    ("a child eats an apple .", "someone is eating .", "-"),
]


def write_senteval_snli(root: str, split: str, n: int = 60, seed: int = 0) -> str:
    """SentEval-format SNLI with n generated pairs: premises shared by 3 hypotheses
    (entailment, neutral, contradiction), distinct hypotheses."""
    import random

    rnd = random.Random(seed)
    d = os.path.join(root, "downstream", "SNLI")
    os.makedirs(d, exist_ok=True)
    nouns = ["man", "woman", "dog", "child", "cat", "bird", "chef", "runner", "player", "singer"]
    verbs = ["runs", "sleeps", "eats", "sings", "jumps", "reads", "cooks", "swims"]
    labels = ["entailment", "neutral", "contradiction"]
    with open(os.path.join(d, f"s1.{split}"), "w") as f1, open(os.path.join(d, f"s2.{split}"), "w") as f2, \
            open(os.path.join(d, f"labels.{split}"), "w") as fl:
        for i in range(n):
            if i % 3 == 0:  # as in SNLI, each premise has one hypothesis per label
                premise = f"the {rnd.choice(nouns)} {rnd.choice(verbs)} in place {i} .\n"
            f1.write(premise)
            f2.write(f"a {rnd.choice(nouns)} {rnd.choice(verbs)} near spot {i} .\n")
            fl.write(labels[i % 3] + "\n")
    return root


ROBERTA_CORPUS = [
    "The quick brown fox jumps over the lazy dog. Café, naïve, résumé!",
    "A man is playing a guitar. A woman is slicing an onion.",
    "你好世界，東京タワー 😀🎉 emoji and CJK.",
    "don't won't it's we're I'll they've I'd    spaced   out\ttabs\nnewlines",
    "Numbers 12345 3.14 1,000,000 and punctuation ... !!! ???",
]


def write_bpe_tokenizer_files(path: str, vocab_size: int = 300) -> str:
    """Trains `tokenizers`' ByteLevelBPETokenizer on a small corpus and writes vocab.json and
    merges.txt with RoBERTa's special tokens (<s> 0, <pad> 1, </s> 2, <unk> 3, <mask> 4)."""
    from tokenizers import ByteLevelBPETokenizer

    os.makedirs(path, exist_ok=True)
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(ROBERTA_CORPUS * 4, vocab_size=vocab_size, min_frequency=1,
                            special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"], show_progress=False)
    bpe.save_model(path)
    return path


def write_hf_roberta_dir(path: str, num_layers: int = 2, prefixed: bool = True, seed: int = 0,
                         tokenizer_json: bool = False, lm_head: bool = False, positions: int = 66) -> str:
    """A tiny random RoBERTa in Hugging Face's format: config.json (model_type roberta),
    model.safetensors (keys prefixed "roberta." as RobertaForMaskedLM writes them, or bare as
    RobertaModel does), and vocab.json + merges.txt, or tokenizer.json only.

    With `lm_head`, also RobertaForMaskedLM's masked-LM head (`lm_head.dense`, `lm_head.layer_norm`,
    `lm_head.bias`; the decoder weight is tied to the word embeddings and, as `save_pretrained`
    writes it, left out), drawn after the encoder's tensors so that those stay the same.
    `positions` position embeddings hold `positions - 2` tokens (RoBERTa's offset)."""
    import json

    import numpy as np
    from safetensors.numpy import save_file

    write_bpe_tokenizer_files(path)
    with open(os.path.join(path, "vocab.json"), encoding="utf-8") as f:
        vocab_size = len(json.load(f))
    if tokenizer_json:
        from tokenizers import Tokenizer, models, pre_tokenizers

        tok = Tokenizer(models.BPE.from_file(os.path.join(path, "vocab.json"), os.path.join(path, "merges.txt")))
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.save(os.path.join(path, "tokenizer.json"))
        os.remove(os.path.join(path, "vocab.json"))
        os.remove(os.path.join(path, "merges.txt"))
    h, inter, pad = 24, 48, 1
    cfg = {"model_type": "roberta", "architectures": ["RobertaForMaskedLM" if lm_head else "RobertaModel"],
           "vocab_size": vocab_size, "hidden_size": h,
           "num_hidden_layers": num_layers, "num_attention_heads": 2, "intermediate_size": inter,
           "hidden_act": "gelu", "max_position_embeddings": positions, "type_vocab_size": 1,
           "layer_norm_eps": 1e-5, "pad_token_id": pad, "bos_token_id": 0, "eos_token_id": 2}
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump(cfg, f)
    t = _random_hf_bert_tensors(seed, vocab_size, h, inter, num_layers, positions=positions, token_types=1)
    t = {("roberta." if prefixed else "") + k: v for k, v in t.items()}
    if lm_head:
        rng = np.random.default_rng([seed, 1])
        t.update({"lm_head.dense.weight": rng.normal(size=(h, h)).astype(np.float32) * 0.2,
                  "lm_head.dense.bias": rng.normal(size=h).astype(np.float32) * 0.2,
                  "lm_head.layer_norm.weight": 1 + rng.normal(size=h).astype(np.float32) * 0.2,
                  "lm_head.layer_norm.bias": rng.normal(size=h).astype(np.float32) * 0.2,
                  "lm_head.bias": rng.normal(size=vocab_size).astype(np.float32) * 0.2})
    save_file(t, os.path.join(path, "model.safetensors"))
    return path


def rebuilt_from_config(encoder, config=None):
    """`encoder` rebuilt as `keras.saving.load_model` rebuilds it, weights aside: from its config (or
    `config`, an edited copy of it), then its tokenizer from the assets it saves."""
    import tempfile

    from common.models.encoder import SentenceEncoder

    clone = SentenceEncoder.from_config(encoder.get_config() if config is None else config)
    with tempfile.TemporaryDirectory() as assets:
        encoder.save_assets(assets)
        clone.load_assets(assets)
    return clone
