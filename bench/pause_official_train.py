"""The official PAUSE trainer (EQTPartners/pause `train_nli.py`), run end to end offline: one job.

    TF_USE_LEGACY_KERAS=1 .venv/bin/python -m bench.pause_official_train --code=<checkout of EQTPartners/pause> \\
        --job=job.json --out=<folder>

bench/parity.py writes the job and runs this in a subprocess (its `pause` row). The official code is
TensorFlow 2.4 with Keras 2 as `tf.keras`; here it runs under this project's TensorFlow with tf-keras as
`tf.keras` (TF_USE_LEGACY_KERAS=1, checked at start). Its own `train_nli.run()` trains: `EmbedModel`
over `hub.KerasLayer`, `SiameseModel` compiled with `get_nnpu_loss_fn`, `make_dataset` (four class
streams mixed by `prior`), `WarmUp` over `PolynomialDecay`, its annealing callback, its `fit` and its
`save_model`s, with its command-line flags. What cannot run offline is patched, and nothing else:

- `train_files` / `eval_files` name `gs://motherbrain-pause/...` folders: they name the job's local
  TFRecord folders instead (`records`, written by bench/parity.py in the official feature layout
  from the toolkit run's own labelled split);
- `EmbedModel` is built with the job's local TF-Hub-format BERT (`hub`, written by `export.py
  --format=tfhub-bert` from the start) in place of the tfhub.dev URL that `train_nli.py` hard-codes.

Seeded with `tf_keras.utils.set_random_seed(seed)` before `run()` (the official code sets no seed).
Writes `<out>/result.json`: wall seconds of `run()`, the patches, the official flags, and the
TensorBoard batch losses. The trained embedder is the official `EmbedModel.save_model` SavedModel
(`<out>/model/embed/final`), which bench/parity.py scores with the toolkit's STS evaluator.
"""

from __future__ import annotations

import glob
import json
import os
import sys
import time

from absl import flags

from common import cli
from common.errors import UserError

FLAGS = flags.FLAGS
# The official streams, by the sub-type `data_utils.get_file` selects them with.
STREAMS = ("entailment", "contradiction", "neutral", "unl")
EVAL = "eval"
PATCHES = (
    "train_nli.train_files / eval_files: the job's local TFRecord folders instead of gs://motherbrain-pause/",
    "train_nli.EmbedModel: built on the job's local TF-Hub-format BERT export instead of the tfhub.dev URL",
)


def define_flags() -> None:
    """The worker's flags, defined when it runs, not at import (see bench/harness.py)."""
    flags.DEFINE_string("code", None, "A checkout of the official code (git clone https://github.com/EQTPartners/pause).")
    flags.DEFINE_string("job", None, "The job (JSON): hub, records, seed, train_epochs, train_steps_per_epoch, "
                                     "batch_size, max_seq_len, train_lr, prior, pos_sample_prec.")
    flags.DEFINE_string("out", None, "Folder of the official run's logs, models and result.json.")


def official_argv(job: dict, out: str) -> list:
    """train_nli.py's command line for `job`: the official flags, nothing else."""
    return ["train_nli.py", f"--train_epochs={job['train_epochs']}",
            f"--train_steps_per_epoch={job['train_steps_per_epoch']}", f"--batch_size={job['batch_size']}",
            f"--max_seq_len={job['max_seq_len']}", f"--prior={job['prior']}", f"--train_lr={job['train_lr']}",
            f"--pos_sample_prec={job['pos_sample_prec']}", f"--log_dir={os.path.join(out, 'log')}",
            f"--model_dir={os.path.join(out, 'model', 'final')}"]


def batch_losses(log_dir: str) -> list:
    """The per-batch training losses the official TensorBoard callback wrote (`batch_loss`), in step order."""
    import tensorflow as tf

    found = {}
    for path in glob.glob(os.path.join(log_dir, "train", "events.out.tfevents.*")):
        for event in tf.compat.v1.train.summary_iterator(path):
            for value in event.summary.value:
                if value.tag == "batch_loss":
                    number = tf.make_ndarray(value.tensor) if value.HasField("tensor") else value.simple_value
                    found[int(event.step)] = float(number)
    return [found[k] for k in sorted(found)]


def train(code: str, job: dict, out: str) -> dict:
    """Runs the official `train_nli.run()` on `job`; returns the record."""
    import tensorflow as tf

    if not tf.keras.__name__.startswith("tf_keras"):
        raise UserError(f"tf.keras is {tf.keras.__name__}, not tf-keras: run with TF_USE_LEGACY_KERAS=1 (the official "
                        "code is Keras 2).")
    records = os.path.abspath(job["records"])
    for stream in (*STREAMS, EVAL):
        if not glob.glob(os.path.join(records, stream, "*")):
            raise UserError(f"{records}/{stream}: no TFRecord files; bench/parity.py writes them.")
    hub_folder = os.path.abspath(job["hub"])
    sys.path.insert(0, os.path.abspath(code))
    import embed_model as official_embed  # noqa: E402  (the official modules, from --code)
    import train_nli as official_train

    # Relative to `records` (the working directory while it trains): `get_file` picks a stream by a
    # substring of its pattern, which an absolute path could contain by accident.
    official_train.train_files = lambda prec: [f"{stream}/*" for stream in STREAMS]
    official_train.eval_files = lambda prec: [f"{EVAL}/*"]

    class LocalEmbedModel(official_embed.EmbedModel):
        """The official EmbedModel, on the local export instead of the URL train_nli.py passes."""

        def __init__(self, bert_model_link: str, max_seq_len: int = 128):
            super().__init__(hub_folder, max_seq_len)

    official_train.EmbedModel = LocalEmbedModel
    import tf_keras

    tf_keras.utils.set_random_seed(int(job["seed"]))
    out = os.path.abspath(out)
    argv = official_argv(job, out)
    sys.argv = argv
    here = os.getcwd()
    os.chdir(records)
    began = time.perf_counter()
    try:
        official_train.run()
    finally:
        os.chdir(here)
    seconds = time.perf_counter() - began
    return {"seconds": round(seconds, 1), "argv": argv[1:], "patches": list(PATCHES),
            "losses": batch_losses(os.path.join(out, "log")), "embedder": os.path.join("model", "embed", "final"),
            "tensorflow": tf.__version__, "tf_keras": tf_keras.__version__}


def main(argv):
    del argv
    if not FLAGS.code or not FLAGS.job or not FLAGS.out:
        raise UserError("--code, --job and --out are required.")
    with open(FLAGS.job) as f:
        job = json.load(f)
    os.makedirs(FLAGS.out, exist_ok=True)
    record = train(FLAGS.code, job, FLAGS.out)
    with open(os.path.join(FLAGS.out, "result.json"), "w") as f:
        json.dump(record, f, indent=1)


if __name__ == "__main__":
    define_flags()
    cli.run(main)
