"""RoBERTa folders against Hugging Face: the toolkit's token ids, mean-pooled embeddings and masked-LM
logits on a tiny random RoBERTa folder, against `transformers`' tokenizer, `RobertaModel` (mean
pooling), `RobertaForMaskedLM` and sentence-transformers on the same folder.

    make reference-env        # once: PyTorch (CPU), transformers and sentence-transformers in .venv-ref
    .venv/bin/python -m bench.roberta_reference

The folder is the test suite's (tests/fixtures.py `write_hf_roberta_dir`: 2 layers, hidden 24, a
300-token byte-level BPE trained with `tokenizers`, `roberta.`-prefixed weights and RobertaForMaskedLM's
head), so the numbers say what the tests' NumPy reference stands for. The reference side runs in
.venv-ref (bench/roberta_worker.py, which imports nothing of this project). Writes a dated results
page and JSON to `--results_dir`. Not part of the test suite.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from absl import flags

from common import cli

from bench import harness

FLAGS = flags.FLAGS
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Padding, truncation at --max_seq_len, accents, emoji, CJK, contractions, runs of whitespace, an empty string.
SENTENCES = [
    "A man is playing a guitar.",
    "",
    "Café  naïve 😀 — don't!",
    "short",
    "你好世界，東京タワー 🎉 emoji and CJK.",
    "don't won't it's we're I'll they've I'd    spaced   out\ttabs\nnewlines",
    "Numbers 12345 3.14 1,000,000 and punctuation ... !!! ???",
    "The quick brown fox jumps over the lazy dog. " * 8,
]



def define_flags() -> None:
    """The benchmark's flags, defined when it runs, not at import (see bench/harness.py)."""
    flags.DEFINE_string("reference_python", ".venv-ref/bin/python", "Python of the reference environment.")
    flags.DEFINE_string("work_dir", "artifacts/roberta_reference", "Where the folder and the two sides' outputs go.")
    flags.DEFINE_integer("max_seq_len", 64, "Truncation length on both sides (the folder holds 64 tokens).")
    flags.DEFINE_string("results_dir", "docs/benchmarks/roberta_reference", "Where README.md and results.json go.")


def toolkit_side(folder: str) -> dict:
    """Token ids per sentence, mean-pooled embeddings and the MLM head's logits at every real position."""
    import numpy as np
    import tensorflow as tf

    from common import SentenceModel
    from common.models.encoder import EncoderConfig, build_encoder
    from common.models.masked_lm import MaskedLMHead

    encoder = build_encoder(EncoderConfig(spec=folder, pooling="mean", max_seq_len=FLAGS.max_seq_len))
    out = encoder(tf.constant(SENTENCES))
    real = out["padding_mask"].numpy() > 0
    head = MaskedLMHead.for_encoder(encoder)
    return {"ids": [row[m].tolist() for row, m in zip(out["token_ids"].numpy(), real)],
            "mean": out["pooled"].numpy(),
            "mlm_logits": head(tf.boolean_mask(out["sequence_output"], real)).numpy(),
            "sentence_model": np.asarray(SentenceModel(folder, max_seq_len=FLAGS.max_seq_len).encode(SENTENCES))}


def reference_side(folder: str) -> dict:
    import numpy as np

    if not os.path.exists(FLAGS.reference_python):
        raise SystemExit(f"{FLAGS.reference_python} not found: run `make reference-env` first, or pass "
                         "--reference_python.")
    sentences = os.path.join(FLAGS.work_dir, "sentences.json")
    with open(sentences, "w", encoding="utf-8") as f:
        json.dump(SENTENCES, f)
    out = os.path.join(FLAGS.work_dir, "reference.npz")
    proc = subprocess.run([FLAGS.reference_python, os.path.join(REPO, "bench", "roberta_worker.py"),
                           f"--folder={folder}", f"--sentences={sentences}", f"--max_seq_len={FLAGS.max_seq_len}",
                           f"--out={out}"], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"bench/roberta_worker.py failed:\n{proc.stderr[-3000:]}")
    data = np.load(out)
    return {"ids": [data[f"ids_{i}"].tolist() for i in range(len(SENTENCES))],
            "transformers_mean": data["transformers_mean"], "mlm_logits": data["mlm_logits"],
            "sentence_transformers": data["sentence_transformers"], "versions": json.loads(str(data["versions"]))}


def main(argv):
    import numpy as np

    sys.path.insert(0, os.path.join(REPO, "tests"))
    from fixtures import write_hf_roberta_dir

    load = harness.Load()  # the reference side runs in a child process: its CPU is this benchmark's
    folder = write_hf_roberta_dir(os.path.join(FLAGS.work_dir, "tiny-roberta"), lm_head=True)
    ours, theirs = toolkit_side(folder), reference_side(folder)
    ids_equal = sum(a == b for a, b in zip(ours["ids"], theirs["ids"]))
    rows = [
        ("token ids", "`AutoTokenizer` (`" + theirs["versions"]["tokenizer_class"] + "`), truncation at "
         f"{FLAGS.max_seq_len}", f"{ids_equal} of {len(SENTENCES)} sentences identical", None),
        ("mean-pooled embeddings (`EncoderConfig(pooling=\"mean\")`)", "`RobertaModel`, last hidden states "
         "averaged over the attention mask", None, np.abs(ours["mean"] - theirs["transformers_mean"]).max()),
        ("`SentenceModel(folder).encode`", "`SentenceTransformer([Transformer, Pooling(mean)]).encode`", None,
         np.abs(ours["sentence_model"] - theirs["sentence_transformers"]).max()),
        ("masked-LM logits at every real position (`MaskedLMHead.for_encoder`)", "`RobertaForMaskedLM`",
         f"{ours['mlm_logits'].shape[0]} positions x {ours['mlm_logits'].shape[1]} tokens",
         np.abs(ours["mlm_logits"] - theirs["mlm_logits"]).max()
         if ours["mlm_logits"].shape == theirs["mlm_logits"].shape else float("inf")),
    ]
    v = theirs["versions"]
    setting = [
        f"Reference: torch {v['torch']}, transformers {v['transformers']}, sentence-transformers "
        f"{v['sentence_transformers']}, tokenizers {v['tokenizers']} (`make reference-env`)",
        "Model: the test suite's tiny random RoBERTa folder (2 layers, hidden 24, 2 heads, a 300-token "
        "byte-level BPE, `roberta.`-prefixed weights with RobertaForMaskedLM's head; tests/fixtures.py)",
        f"Sentences: {len(SENTENCES)} (padding, truncation at {FLAGS.max_seq_len} tokens, accents, emoji, "
        "CJK, contractions, whitespace runs, an empty string)"]
    table = ["| toolkit | Hugging Face | compared | largest absolute difference |", "| --- | --- | --- | --- |"]
    for ours_name, theirs_name, what, diff in rows:
        table.append(f"| {ours_name} | {theirs_name} | {what or 'every component'} | "
                     f"{'-' if diff is None else f'{diff:.1e}'} |")
    results = {"versions": v, "sentences": SENTENCES, "ids_identical": ids_equal,
               "max_abs_diff": {"transformers_mean": float(rows[1][3]), "sentence_transformers": float(rows[2][3]),
                                "mlm_logits": float(rows[3][3])}}
    print(harness.write_page(FLAGS.results_dir, "RoBERTa folders against Hugging Face", "bench.roberta_reference",
                             table, results, load, setting))
    return 0 if ids_equal == len(SENTENCES) and max(results["max_abs_diff"].values()) < 1e-4 else 1


if __name__ == "__main__":
    define_flags()
    cli.run(main)
