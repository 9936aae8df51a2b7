"""Scores a model on SentEval's transfer, STS and probing tasks (no PyTorch).

Tasks: MR, CR, SUBJ, MPQA, SST2, SST5, TREC, MRPC, SICK-E, SICK-R, STS-B, SNLI
(when its train files exist), STS12-16 and the ten probing tasks (when
`<data_path>/probing/` holds them). COCO caption retrieval is not supported.
Results: a table, and `<artifacts_dir>/test/senteval_<name>.json` with per-task
scores, sample counts, seconds and DeCLUTR's downstream and probing averages.

    python senteval_eval.py --model=minilm --data_path=../shared/data --config=default
    python senteval_eval.py --model=20261122-101500 --tasks=MR,CR,SICK-R --config=fast
    python senteval_eval.py --model=minilm --config=fast --config=pause   # one encoding, two settings
    python senteval_eval.py --model=20261122-101500 --model_location=gcs --gcs_bucket=my-bucket --config=pause
    python senteval_eval.py --model=minilm --config=pause --tasks=TREC,SST5 --seed=1111,1112,1113,1114,1115

A seed gives the score the original SentEval gives at that seed on the same
embeddings (same random streams). Several seeds share one encoding; each seed
writes its own file (`..._seed<N>.json`) and a spread table (mean, std, min,
max per task) goes to `..._seeds.json`.
"""

from __future__ import annotations

import sys

from absl import flags

from common import cli  # first: it quiets TensorFlow's start-up

import tensorflow as tf  # noqa: E402  (after cli)
from common import artifacts
from common.errors import UserError
from common.flags import define_data_flags, define_model_flags
from common.loading.resolve import resolve_model
from common.evaluation.senteval import CONFIGS, EmbeddingCache, evaluate_senteval, format_table, get_config
from common.evaluation.senteval.classifier import check_seed
from common.evaluation.senteval.evaluate import format_spread, seed_spread, tasks_to_run

# Sentences per task split above which encoding shows a progress bar.
PROGRESS_MIN_SENTENCES = 2000

define_data_flags()
define_model_flags()
_TASKS = flags.DEFINE_list(
    "tasks", [],
    "Comma-separated tasks: MR, CR, SUBJ, MPQA, SST2, SST5, TREC, MRPC, SICK-E, SICK-R, STS-B, SNLI, STS12..STS16, "
    "SentLen, WC, TreeDepth, TopConst, BShift, Tense, SubjNum, ObjNum, SOMO, CoordInv (SentEval's names work too), "
    "or the groups downstream, sts, probing, all. Default: every task whose data is under --data_path.")
_CONFIG = flags.DEFINE_multi_enum(
    "config", ["default"], sorted(CONFIGS),
    "SentEval setting: fast (kfold 5, RMSprop), default/test (kfold 10, Adam), pause (kfold 10, RMSprop: the "
    "PAUSE repository's). Repeat the flag to run several settings on one set of embeddings; each then writes "
    "senteval_<name>_<config>.json instead of senteval_<name>.json.")
_SEED = flags.DEFINE_list(
    "seed", ["1111"],
    "Seed(s) of the classifiers' initialisation and data order and of TREC's and MRPC's folds (SentEval's 1111; "
    "MR, CR, SUBJ and MPQA keep SentEval's fixed folds). Several, comma-separated, share one encoding and add a "
    "table of the spread over seeds.")
_NHID = flags.DEFINE_integer("nhid", None, "Hidden units of an MLP classifier; default: the config's (0, logistic "
                             "regression).", lower_bound=0)
_SCORE_TRAINING_DATA = flags.DEFINE_bool(
    "score_training_data", False,
    "Score tasks whose evaluation data the model was trained on (its config.json lists them, e.g. SNLI for a "
    "model trained on SentEval's SNLI dev/test pairs); such scores are not held-out results.")
FLAGS = flags.FLAGS


def main(argv):
    configs = [get_config(name, _NHID.value) for name in dict.fromkeys(_CONFIG.value)]
    seeds = _seeds(_SEED.value)
    chosen, _ = tasks_to_run(_TASKS.value, FLAGS.data_path)  # unknown tasks and missing data fail before loading
    embedder = resolve_model(FLAGS.model, FLAGS.artifacts_dir, FLAGS.model_location, FLAGS.gcs_bucket,
                             FLAGS.max_seq_len, FLAGS.precision)
    overlap = sorted(set(chosen) & set(embedder.trained_on))
    if overlap and not _SCORE_TRAINING_DATA.value:
        sys.stderr.write(
            f"senteval_eval.py: {embedder.name} was trained on the evaluation data of {', '.join(overlap)} "
            f"(its config.json, trained_on_evaluation_data), so its score there would not be a held-out result. "
            f"Leave {', '.join(overlap)} out of --tasks, or pass --score_training_data to score it anyway.\n")
        return 2

    def embed(sentences, desc):
        return embedder.embed(sentences, FLAGS.batch_size, progress=len(sentences) >= PROGRESS_MIN_SENTENCES,
                              desc=desc)

    cache = EmbeddingCache()  # shared by the settings: every split is encoded once
    out_dir = artifacts.test_dir(FLAGS.artifacts_dir)
    tf.io.gfile.makedirs(out_dir)
    for config in configs:
        runs = {}
        for seed in seeds:
            results = evaluate_senteval(embed, FLAGS.data_path, _TASKS.value, config, seed, cache,
                                        embedder.name, progress=True)
            runs[seed] = results = {"model": embedder.name, "source": embedder.source, "precision": FLAGS.precision,
                                    **results}
            suffix = (f"_{config.name}" if len(configs) > 1 else "") + (f"_seed{seed}" if len(seeds) > 1 else "")
            suffix += f"_{FLAGS.precision}" if FLAGS.precision != "fp32" else ""
            out_path = artifacts.join(out_dir, f"senteval_{embedder.name}{suffix}.json")
            artifacts.write_json(out_path, results)
            print(f"model: {embedder.name} ({embedder.source}); config: {config.name}; seed: {seed}")
            print(format_table(results))
            print(f"seconds: {results['seconds']:.1f}; results in {out_path}")
        if len(seeds) > 1:
            spread = seed_spread(runs)
            suffix = f"_{config.name}" if len(configs) > 1 else ""
            out_path = artifacts.join(out_dir, f"senteval_{embedder.name}{suffix}_seeds.json")
            artifacts.write_json(out_path, {"model": embedder.name, "source": embedder.source,
                                            "config": config.name, "seeds": seeds, "tasks": spread})
            print(f"model: {embedder.name}; config: {config.name}; test scores over seeds {','.join(map(str, seeds))}")
            print(format_spread(spread))
            print(f"spread in {out_path}")


def _seeds(values) -> list:
    """--seed's values as distinct integers SentEval accepts (UserError, one line and exit 2, otherwise)."""
    seeds = []
    for value in values:
        try:
            seed = int(value)
            check_seed(seed)
        except ValueError:
            raise UserError(f"--seed: expected integers in [0, 2**32) separated by commas, got {value!r}.")
        if seed not in seeds:
            seeds.append(seed)
    if not seeds:
        raise UserError("--seed: expected at least one seed, got none.")
    return seeds

if __name__ == "__main__":
    cli.run(main)
