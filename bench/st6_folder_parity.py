"""Folders saved by sentence-transformers itself, embedded by it and by this toolkit: equal to 1e-5?

    make reference-env          # once: PyTorch (CPU) + sentence-transformers in .venv-ref
    .venv/bin/python -m bench.st6_folder_parity --data_path=../shared/data

The reference environment's Python runs bench/st6_folder_reference.py (which imports nothing of this
project): it saves MiniLM, and models built from MiniLM's transformer with Dense and Normalize
modules, with prompts and with `include_prompt=False`, each with the installed sentence-transformers'
`save` (6.x writes the `pooling_mode` key), and embeds STS-B test's sentences with each folder as
`SentenceTransformer(folder)` loads it (and LONG_TEXTS texts of LONG of those sentences each, past
MiniLM's 256 tokens, so that where each side truncates is compared too): with the default prompt,
with `prompt=""` and with `prompt_name="document"` where the folder has prompts. This process loads
each folder with `SentenceModel(folder)` and embeds the same sentences with the same arguments. The page lists the
largest absolute difference of each, against the bound of 1e-5. Not part of the test suite (it
needs PyTorch); the suite tests each layout on tiny random BERTs against NumPy.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile

from absl import flags

from common import cli

from bench import harness

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BOUND = 1e-5
# Texts made of this many STS-B sentences each, and how many: past MiniLM's 256 tokens.
LONG, LONG_TEXTS = 60, 4

FLAGS = flags.FLAGS


def define_flags() -> None:
    """The benchmark's flags, defined when it runs, not at import (see bench/harness.py)."""
    flags.DEFINE_string("data_path", "data", "Data root (holds downstream/).")
    flags.DEFINE_string("reference_python", ".venv-ref/bin/python",
                        "Python of the reference environment (`make reference-env`).")
    flags.DEFINE_string("results_dir", "docs/benchmarks/st6_folders", "Where the results page (README.md) and "
                        "results.json are written.")
    flags.DEFINE_string("work_dir", None, "Where the saved folders and their embeddings go; default: a new "
                        "temporary directory.")
    flags.DEFINE_integer("threads", 2, "Threads of both sides.", lower_bound=1)
    flags.DEFINE_integer("batch_size", 64, "Sentences per batch on both sides.", lower_bound=1)
    flags.DEFINE_integer("max_sentences", None, "Embed only the first this many sentences (a quick run).",
                         lower_bound=1)


def _layout(folder: str) -> str:
    """What of a folder's layout the row shows: its modules, the pooling config's keys, vocab.txt or not."""
    with open(os.path.join(folder, "modules.json")) as f:
        modules = json.load(f)
    kinds = [m["type"].rsplit(".", 1)[-1] for m in modules]
    pooling = next(m["path"] for m in modules if m["type"].endswith(".Pooling"))
    with open(os.path.join(folder, pooling, "config.json")) as f:
        config = json.load(f)
    keys = ", ".join(f"{k}={json.dumps(v)}" for k, v in config.items() if k.startswith("pooling_mode")
                     or k == "include_prompt")
    vocab = "vocab.txt" if os.path.exists(os.path.join(folder, "vocab.txt")) else "tokenizer.json only"
    return f"{' + '.join(kinds)}; pooling {keys}; {vocab}"


def main(argv):
    import numpy as np
    import tensorflow as tf

    from common import SentenceModel
    from common.data.sts import load_stsb
    from common.errors import UserError
    from common.models.sources.names import minilm_dir

    if not os.path.exists(FLAGS.reference_python):
        raise UserError(f"--reference_python={FLAGS.reference_python}: not found; build the reference environment "
                        "with `make reference-env`.")
    tf.config.threading.set_intra_op_parallelism_threads(FLAGS.threads)
    tf.config.threading.set_inter_op_parallelism_threads(FLAGS.threads)
    test = load_stsb(FLAGS.data_path, "test")
    sentences = (test.sentences1 + test.sentences2)[:FLAGS.max_sentences]
    sentences += [" ".join(sentences[i * LONG:(i + 1) * LONG]) for i in range(LONG_TEXTS)]
    work = FLAGS.work_dir or tempfile.mkdtemp(prefix="st6_folders_")
    os.makedirs(work, exist_ok=True)
    with open(os.path.join(work, "sentences.json"), "w") as f:
        json.dump(sentences, f)
    env = {**os.environ, "OMP_NUM_THREADS": str(FLAGS.threads), "MKL_NUM_THREADS": str(FLAGS.threads)}
    command = [FLAGS.reference_python, os.path.join(REPO, "bench", "st6_folder_reference.py"),
               f"--minilm={minilm_dir()}", f"--out={work}", f"--sentences={os.path.join(work, 'sentences.json')}",
               f"--threads={FLAGS.threads}", f"--batch_size={FLAGS.batch_size}"]
    done = subprocess.run(command, env=env, cwd=REPO)
    if done.returncode != 0:
        raise RuntimeError(f"the sentence-transformers side exited with code {done.returncode}; its error is above.")
    with open(os.path.join(work, "manifest.json")) as f:
        manifest = json.load(f)

    rows, data = [], {"sentences": len(sentences), "versions": manifest["versions"], "bound": BOUND, "folders": {}}
    for name, runs in manifest["folders"].items():
        folder = os.path.join(work, name)
        model = SentenceModel(folder)
        layout = _layout(folder)
        data["folders"][name] = {"layout": layout, "runs": {}}
        for run, kwargs in runs.items():
            theirs = np.load(os.path.join(folder, f"{run}.npy"))
            ours = model.encode(sentences, batch_size=FLAGS.batch_size, **kwargs)
            diff = float(np.abs(ours - theirs).max())
            data["folders"][name]["runs"][run] = {"encode_kwargs": kwargs, "max_abs_diff": diff,
                                                  "dim": int(theirs.shape[1])}
            rows.append(f"| {name} | {layout} | `{json.dumps(kwargs)}` | {theirs.shape[1]} | {diff:.2e} | "
                        f"{'yes' if diff <= BOUND else 'NO'} |")
            print(rows[-1])
    worst = max(r["max_abs_diff"] for f in data["folders"].values() for r in f["runs"].values())
    data["max_abs_diff"] = worst
    body = ["| folder | layout as saved | encode(...) | dim | max abs diff | <= 1e-5 |",
            "| --- | --- | --- | --- | --- | --- |", *rows, "",
            f"Largest difference over every folder and call: {worst:.2e} (bound {BOUND:.0e})."]
    versions = ", ".join(f"{k} {v}" for k, v in manifest["versions"].items())
    setting = [f"Sentences: STS-B test, {len(sentences) - LONG_TEXTS} (sentence1 then sentence2), and {LONG_TEXTS} "
               f"texts of {LONG} of them each (past 256 tokens: truncated); batch {FLAGS.batch_size}, "
               f"{FLAGS.threads} threads each side", f"Reference: {versions}"]
    harness.write_page(FLAGS.results_dir, "sentence-transformers folders: this toolkit against sentence-transformers",
                       "bench.st6_folder_parity", body, data, None, setting)
    print(f"largest max abs diff: {worst:.2e}; written: {FLAGS.results_dir}/README.md, results.json")
    return 0 if worst <= BOUND else 1


if __name__ == "__main__":
    define_flags()
    cli.run(main)
