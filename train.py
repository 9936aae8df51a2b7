"""Trains sentence encoders: PAUSE (NLI with partial labels, or STS-B fine-tuning), DeCLUTR and SimCSE.

    python train.py --method=pause --train_data=senteval:dev,senteval:test --pos_sample_prec=5
    python train.py --method=pause --task=stsb --pretrained_weights=<ID>
    python train.py --method=declutr --train_data=documents/wikitext-2-raw/test.txt
    python train.py --method=simcse --simcse_mode=unsup --train_data=senteval:dev,senteval:test
    python train.py --method=<method> --resume=<ID>     # continue an interrupted run

Flags shared by several methods default to the method's own defaults (shown in
brackets in their help).
"""

from __future__ import annotations

import dataclasses
import sys

from absl import app, flags

from common.distribute import STRATEGIES
from common.flags import define_artifact_flags, define_data_flags
from declutr_tf.config import DeclutrConfig
from declutr_tf.span_sampling import SAMPLING_STRATEGIES
from pause_tf.annealing import ANNEALING_MODES
from pause_tf.config import TASKS, PauseConfig
from pause_tf.model import STSB_OBJECTIVES
from simcse_tf.config import MODE_DEFAULTS, MODES, POOLINGS, SimcseConfig

METHODS = ("pause", "declutr", "simcse")
CONFIGS = {"pause": PauseConfig, "declutr": DeclutrConfig, "simcse": SimcseConfig}
_S = MODE_DEFAULTS
_P, _D = PauseConfig(), DeclutrConfig()

flags.DEFINE_enum("method", "pause", METHODS, "Training method.")
flags.DEFINE_string("model", "minilm", "Encoder spec: minilm, small, base, a TF Hub URL or an HF BERT directory.")
flags.DEFINE_list("train_data", None,
                  f"PAUSE: NLI sources, .jsonl/.txt/.tsv files or senteval:<split> [{','.join(_P.train_data)}]. "
                  f"DeCLUTR: text files (one document per line) or directories of .txt [{','.join(_D.train_data)}]. "
                  "SimCSE: unsup: .txt files (one sentence per line), NLI sources or stsb:<split>; sup: NLI "
                  f"sources [{','.join(SimcseConfig().train_data)}]. "
                  "Relative paths are under --data_path.")
define_data_flags()
define_artifact_flags()
# Shared, with per-method defaults.
flags.DEFINE_integer("train_epochs", None, f"Epochs [pause {_P.train_epochs}, declutr {_D.train_epochs}, simcse "
                     f"unsup {_S['unsup']['train_epochs']}, sup {_S['sup']['train_epochs']}].", lower_bound=1)
flags.DEFINE_integer("batch_size", None, f"Global batch: pairs for pause [{_P.batch_size}], documents for declutr "
                     f"[{_D.batch_size}], sentences or triples for simcse [unsup {_S['unsup']['batch_size']}, sup "
                     f"{_S['sup']['batch_size']}].", lower_bound=1)
flags.DEFINE_integer("train_steps_per_epoch", None,
                     f"Steps per epoch [pause {_P.train_steps_per_epoch}, declutr {_D.train_steps_per_epoch}, "
                     "simcse: one pass over the data].", lower_bound=1)
flags.DEFINE_integer("max_seq_len", None, f"Truncation length in tokens [pause {_P.max_seq_len}, declutr "
                     f"{_D.max_seq_len}, simcse {_S['unsup']['max_seq_len']}].", lower_bound=2)
flags.DEFINE_float("train_lr", None, f"Peak learning rate [pause {_P.train_lr}, declutr {_D.train_lr}, simcse unsup "
                   f"{_S['unsup']['train_lr']}, sup {_S['sup']['train_lr']}].")
flags.DEFINE_integer("pad_to_multiple_of", 1, "Round batch lengths up to a multiple (use --max_seq_len on TPU).")
flags.DEFINE_integer("seed", 0, "Seed of data order, label split, span sampling, initialisation and dropout.")
flags.DEFINE_enum("strategy", "auto", STRATEGIES, "tf.distribute strategy.")
flags.DEFINE_string("tpu", "", "TPU name or address for --strategy=tpu.")
# absl.logging defines --log_dir for log files it only writes on request; the
# original PAUSE flag of that name (TensorBoard directory) takes its place.
if "log_dir" in flags.FLAGS:
    delattr(flags.FLAGS, "log_dir")
flags.DEFINE_string("log_dir", "", "TensorBoard directory; default artifacts/log/<ID>.")
flags.DEFINE_string("model_dir", "", "Final model directory; default artifacts/model/<ID>.")
flags.DEFINE_string("resume", "", "Run ID of an interrupted run to continue from its last checkpoint.")
flags.DEFINE_integer("checkpoint_every", 500, "Steps between checkpoints.", lower_bound=1)
flags.DEFINE_integer("log_every", 50, "Steps between log lines.", lower_bound=1)
flags.DEFINE_bool("eval_each_epoch", True, "Report STS-B dev Spearman at the end of each epoch.")
# PAUSE.
flags.DEFINE_enum("task", "nli", TASKS, "pause: nli, or stsb to fine-tune --pretrained_weights on STS-B.")
flags.DEFINE_string("pretrained_weights", "", "pause: run ID or artifact directory to start from.")
flags.DEFINE_float("prior", _P.prior, "pause: class prior of the nnPU risk.")
flags.DEFINE_float("pos_sample_prec", _P.pos_sample_prec, "pause: percent of pairs that keep their label (0-100].")
flags.DEFINE_float("labeled_batch_fraction", None,
                   "pause: labelled share of each batch; default --prior, the original's mixing.")
flags.DEFINE_enum("annealing", "global", ANNEALING_MODES,
                  "pause: PU weight (step/total)^3 over the run; per_epoch: the original's restart every epoch; "
                  "off: no PU term.")
flags.DEFINE_enum("stsb_objective", "cosine", STSB_OBJECTIVES,
                  "pause --task=stsb: cosine regression to score/5, or head_mse as the original ft_stsb.py.")
# DeCLUTR.
flags.DEFINE_integer("num_anchors", _D.num_anchors, "declutr: anchors per document (A).", lower_bound=1)
flags.DEFINE_integer("num_positives", _D.num_positives, "declutr: positives per anchor (P).", lower_bound=1)
flags.DEFINE_integer("min_span_len", _D.min_span_len, "declutr: shortest span in tokens.", lower_bound=1)
flags.DEFINE_integer("max_span_len", _D.max_span_len, "declutr: longest span in tokens.", lower_bound=1)
flags.DEFINE_enum("sampling_strategy", "all", SAMPLING_STRATEGIES,
                  "declutr: positives adjacent/overlapping/subsumed (all), or only adjacent or subsumed.")
flags.DEFINE_float("temperature", _D.temperature, "declutr, simcse: contrastive temperature.")
flags.DEFINE_bool("mlm", True, "declutr: masked language modelling on the anchors.")
flags.DEFINE_bool("contrastive", True, "declutr: the contrastive objective.")
flags.DEFINE_float("weight_decay", _D.weight_decay, "declutr: AdamW weight decay.")
flags.DEFINE_float("clip_norm", _D.clip_norm, "declutr: global gradient-norm clip (0 disables).")
# SimCSE.
flags.DEFINE_enum("simcse_mode", "unsup", MODES, "simcse: unsup (dropout views) or sup (NLI triples).")
flags.DEFINE_enum("pooling", "cls_mlp", POOLINGS, "simcse: cls_mlp (MLP in training only), cls or mean.")
flags.DEFINE_float("hard_negative_weight", 1.0, "simcse sup: weight of each premise's own contradiction.")
FLAGS = flags.FLAGS
# Flags whose name differs from the config field.
_RENAMED = {"mode": "simcse_mode"}


def config_from_flags(method: str):
    """The method's config from the flags; flags left at None keep the config default."""
    cls = CONFIGS[method]
    names = {f.name for f in dataclasses.fields(cls)}
    values = {}
    for name in names:
        flag = _RENAMED.get(name, name)
        if flag in FLAGS and FLAGS[flag].value is not None:
            values[name] = FLAGS[flag].value
    if "train_data" in values:
        values["train_data"] = tuple(values["train_data"])
    return cls(**values)


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    if FLAGS.method not in CONFIGS:
        sys.stderr.write(f"train.py --method={FLAGS.method}: not implemented yet; no model was trained.\n")
        return 2
    config = config_from_flags(FLAGS.method)
    if FLAGS.method == "pause":
        from pause_tf.training import train
    elif FLAGS.method == "declutr":
        from declutr_tf.training import train
    else:
        from simcse_tf.training import train
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
