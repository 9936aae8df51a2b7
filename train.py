"""Trains sentence encoders. PAUSE on NLI with partial labels, or STS-B fine-tuning:

    python train.py --method=pause --train_data=senteval:dev,senteval:test --pos_sample_prec=5
    python train.py --method=pause --task=stsb --pretrained_weights=<ID>
    python train.py --resume=<ID>            # continue an interrupted run from its last checkpoint

DeCLUTR and SimCSE are not implemented yet.
"""

from __future__ import annotations

import sys

from absl import app, flags

from common.distribute import STRATEGIES
from common.flags import define_artifact_flags, define_data_flags
from pause_tf.annealing import ANNEALING_MODES
from pause_tf.config import DEFAULT_NLI_TRAIN, TASKS, PauseConfig
from pause_tf.model import STSB_OBJECTIVES

METHODS = ("pause", "declutr", "simcse")
_DEFAULT = PauseConfig()

flags.DEFINE_enum("method", "pause", METHODS, "Training method.")
flags.DEFINE_enum("task", "nli", TASKS, "nli: PAUSE on NLI pairs; stsb: fine-tune --pretrained_weights on STS-B.")
flags.DEFINE_string("model", _DEFAULT.model, "Encoder spec: minilm, small, base, a TF Hub URL or an HF BERT dir.")
flags.DEFINE_string("pretrained_weights", "", "Run ID or artifact directory to start from (required for --task=stsb).")
flags.DEFINE_list("train_data", list(DEFAULT_NLI_TRAIN),
                  "NLI sources: .jsonl/.txt/.tsv files (relative ones under --data_path) or senteval:<split>.")
define_data_flags()
define_artifact_flags()
flags.DEFINE_integer("train_epochs", _DEFAULT.train_epochs, "Epochs (of --train_steps_per_epoch steps).", lower_bound=1)
flags.DEFINE_integer("batch_size", _DEFAULT.batch_size, "Global batch size (all replicas).", lower_bound=1)
flags.DEFINE_integer("train_steps_per_epoch", _DEFAULT.train_steps_per_epoch, "Steps per epoch.", lower_bound=1)
flags.DEFINE_integer("max_seq_len", _DEFAULT.max_seq_len, "Truncation length in tokens.", lower_bound=2)
flags.DEFINE_integer("pad_to_multiple_of", 1, "Round batch lengths up to a multiple (use --max_seq_len on TPU).")
flags.DEFINE_float("prior", _DEFAULT.prior, "Class prior of the nnPU risk.")
flags.DEFINE_float("train_lr", _DEFAULT.train_lr, "Peak learning rate (after 10 % linear warm-up).")
flags.DEFINE_float("pos_sample_prec", _DEFAULT.pos_sample_prec, "Percent of pairs that keep their label (0-100].")
flags.DEFINE_float("labeled_batch_fraction", None,
                   "Labelled share of each batch; default: --prior, the original's mixing.")
flags.DEFINE_enum("annealing", "global", ANNEALING_MODES,
                  "PU weight (step/total)^3 over the run, or per_epoch: the original's restart every epoch.")
flags.DEFINE_enum("stsb_objective", "cosine", STSB_OBJECTIVES,
                  "STS-B fine-tuning: cosine regression to score/5, or head_mse as the original ft_stsb.py.")
flags.DEFINE_integer("seed", 0, "Seed of the label split, data order, initialisation and dropout.")
flags.DEFINE_enum("strategy", "auto", STRATEGIES, "tf.distribute strategy.")
flags.DEFINE_string("tpu", "", "TPU name or address for --strategy=tpu.")
# absl.logging defines --log_dir for log files it only writes on request; the
# original PAUSE flag of that name (TensorBoard directory) takes its place.
if "log_dir" in flags.FLAGS:
    delattr(flags.FLAGS, "log_dir")
flags.DEFINE_string("log_dir", "", "TensorBoard directory; default artifacts/log/<ID>.")
flags.DEFINE_string("model_dir", "", "Final model directory; default artifacts/model/<ID>.")
flags.DEFINE_string("resume", "", "Run ID of an interrupted run to continue from its last checkpoint.")
flags.DEFINE_integer("checkpoint_every", _DEFAULT.checkpoint_every, "Steps between checkpoints.", lower_bound=1)
flags.DEFINE_integer("log_every", _DEFAULT.log_every, "Steps between log lines.", lower_bound=1)
flags.DEFINE_bool("eval_each_epoch", True, "Report STS-B dev Spearman at the end of each epoch.")
FLAGS = flags.FLAGS


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    if FLAGS.method != "pause":
        sys.stderr.write(f"train.py --method={FLAGS.method}: not implemented yet; no model was trained.\n")
        return 2
    from pause_tf.training import train

    config = PauseConfig(
        model=FLAGS.model, pretrained_weights=FLAGS.pretrained_weights, task=FLAGS.task,
        train_data=tuple(FLAGS.train_data), data_path=FLAGS.data_path, train_epochs=FLAGS.train_epochs,
        batch_size=FLAGS.batch_size, train_steps_per_epoch=FLAGS.train_steps_per_epoch,
        max_seq_len=FLAGS.max_seq_len, pad_to_multiple_of=FLAGS.pad_to_multiple_of, prior=FLAGS.prior,
        train_lr=FLAGS.train_lr, pos_sample_prec=FLAGS.pos_sample_prec,
        labeled_batch_fraction=FLAGS.labeled_batch_fraction, annealing=FLAGS.annealing,
        stsb_objective=FLAGS.stsb_objective, seed=FLAGS.seed, strategy=FLAGS.strategy, tpu=FLAGS.tpu,
        artifacts_dir=FLAGS.artifacts_dir, log_dir=FLAGS.log_dir, model_dir=FLAGS.model_dir, resume=FLAGS.resume,
        checkpoint_every=FLAGS.checkpoint_every, log_every=FLAGS.log_every, eval_each_epoch=FLAGS.eval_each_epoch,
    )
    result = train(config)
    print(f"run ID: {result['run_id']}")
    print(f"weights fingerprint: {result['weights_fingerprint']}")
    metrics = result["metrics"]
    print("final: " + " ".join(f"{k}={v:.4g}" for k, v in metrics.items() if isinstance(v, float)))
    if result["model_dir"]:
        print(f"model: {result['model_dir']}")
        print(f"next: python test_sts.py --model={result['run_id']} --data_path={config.data_path} "
              f"--artifacts_dir={config.artifacts_dir}")
    return 0


if __name__ == "__main__":
    app.run(main)
