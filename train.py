"""Trains a sentence encoder with any registered method (PAUSE, DeCLUTR, SimCSE, Trans-Encoder, ...).

    python train.py --method=pause --train_data=senteval:dev,senteval:test --pos_sample_prec=5
    python train.py --method=pause --task=stsb --pretrained_weights=<ID>
    python train.py --method=declutr                      # Gutenberg books by default
    python train.py --method=simcse --simcse_mode=unsup   # sentences cut from the books
    python train.py --method=trans_encoder --pairs=sts_sickr   # unlabelled STS/SICK pairs, 3 cycles
    python train.py --resume=<ID>                         # continue an interrupted run

Every flag is a field of the run's typed config (common/training/config.py and the
method's options); a flag the chosen method does not use is an error. --helpfull
lists the flags by method.
"""

from __future__ import annotations

import os
import sys

from absl import flags

from common import cli  # first: it quiets TensorFlow's start-up
from common import artifacts, notices
from common.evaluation.binary import pair_columns
from common.evaluation.evaluators import dev_evaluator
from common.loading.resolve import CROSS_SUBDIR
from common.flags import define_train_flags, train_config_from_flags
from common.training.loop import NonFiniteLossError
from common.training.runs import train

OWNERS = define_train_flags()
FLAGS = flags.FLAGS


def main(argv):
    config = train_config_from_flags(FLAGS, OWNERS)
    notices.to_stdout()  # the run's `data:` line is for the user, as the docs show it
    run = config.run
    evaluator = dev_evaluator(run.data_path, run.dev_data, run.dev_task,
                              pair_columns(run.dev_columns) if run.dev_columns else None)
    try:
        result = train(config, evaluator=evaluator)
    except NonFiniteLossError as e:
        sys.stderr.write(f"train.py: {e}\n")
        return 1
    config = result["config"]
    print(f"run ID: {result['run_id']}")
    print(f"weights fingerprint: {result['weights_fingerprint']}")
    metrics = result["metrics"]
    print("final: " + " ".join(f"{k}={v:.4g}" for k, v in metrics.items() if isinstance(v, float)))
    selection = result["selection"]
    if selection:
        chosen = (f"the weights of step {selection['step']}, {selection['metric']}={selection['score']:.4g}"
                  if selection["step"] is not None else f"the last weights (no finite {selection['metric']})")
        last = selection["last_score"]
        last = f"{last:.4g}" if isinstance(last, float) else last
        print(f"published: {chosen}; last step {selection['last_step']}: {selection['metric']}={last}")
    if result["model_dir"]:
        print(f"model: {result['model_dir']}")
        # A run ID names <artifacts_dir>/model/<ID>; a model written elsewhere (--model_dir) is named by its path.
        model = result["run_id"]
        if result["model_dir"] != artifacts.model_dir(config.run.artifacts_dir, result["run_id"]):
            model = result["model_dir"]
        print(f"next: python test_sts.py --model={model} --data_path={config.run.data_path} "
              f"--artifacts_dir={config.run.artifacts_dir}")
        if os.path.isdir(os.path.join(result["model_dir"], CROSS_SUBDIR)):
            print(f"      python test_sts.py --model={model} --mode=cross --data_path="
                  f"{config.run.data_path} --artifacts_dir={config.run.artifacts_dir}   # its cross-encoder")
    return 0


if __name__ == "__main__":
    cli.run(main)
