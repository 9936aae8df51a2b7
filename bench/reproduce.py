"""The reproduction ladder: every paper's claim, from one raw BERT pretrained here.

    .venv/bin/python -m bench.reproduce --data_path=../shared/data [--stages=pretrain,raw,simcse,pause,declutr]

1. pretrain: a fresh BERT (`--encoder`, default bert_tiny) with `--method=mlm` on the Gutenberg
   books (whole books held out), `--pretrain_steps` of `--pretrain_batch` windows of 128 tokens;
2. raw: the pretrained model scored with mean pooling and with CLS;
3. simcse: unsup SimCSE on sentences cut from the books; sup SimCSE on SentEval's SNLI dev+test
   triples (the only NLI offline: recorded as trained on SNLI);
4. pause: PAUSE at each `--percentages` of labels, and supervised-only training (cross-entropy
   on exactly the same labelled pairs, same steps, all-labelled batches, no PU term), for each
   `--seeds`; PAUSE at 5 % also with the original per-epoch annealing;
5. declutr: contrastive + MLM, contrastive only, MLM only, on the books;
6. trans_encoder: from the SimCSE unsup model, when that method is registered.

Every model gets the seven-set STS average and STS-B dev from the test_sts.py scorer and the
SentEval `fast` transfer average on `--senteval_tasks`. Each run lives in its own artifacts root
under `--artifacts_dir/runs/<name>/`: a finished run is reused, an interrupted one resumed from its
last checkpoint, so a killed benchmark continues where it stopped. Scores are cached in
`--artifacts_dir/scores.json`. Settings are chosen on STS-B dev only. Not part of the test suite.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any, Dict, List

from absl import app, flags, logging

flags.DEFINE_string("data_path", "data", "Data root (downstream/, documents/gutenberg/).")
flags.DEFINE_string("artifacts_dir", "artifacts/reproduce", "Where the ladder's runs and results are written.")
flags.DEFINE_list("stages", ["pretrain", "raw", "simcse", "pause", "declutr", "trans_encoder"], "Stages to run.")
flags.DEFINE_string("encoder", "bert_tiny", "Fresh BERT to pretrain (bert_tiny, bert_mini, ...).")
flags.DEFINE_integer("pretrain_steps", 3000, "Masked-LM steps.")
flags.DEFINE_integer("pretrain_batch", 64, "Masked-LM windows (of 128 tokens) per step.")
flags.DEFINE_float("pretrain_lr", 5e-4, "Masked-LM peak learning rate.")
flags.DEFINE_integer("simcse_steps", 500, "SimCSE steps (unsup: 64 sentences; sup: 64 triples).")
flags.DEFINE_integer("pause_steps", 400, "PAUSE and supervised-only steps of 64 pairs.")
flags.DEFINE_list("percentages", ["1", "5", "10", "30", "100"], "Label percentages for PAUSE and supervised-only.")
flags.DEFINE_list("seeds", ["0", "1", "2"], "Seeds of the PAUSE and supervised-only rows.")
flags.DEFINE_integer("declutr_steps", 300, "DeCLUTR steps of 8 documents.")
flags.DEFINE_list("senteval_tasks", ["MR", "CR", "SUBJ", "MPQA", "TREC", "MRPC"], "SentEval tasks (fast setting).")
FLAGS = flags.FLAGS

NLI_OFFLINE = ("senteval:dev", "senteval:test")


class Ladder:
    """Runs (cached in their own artifacts roots) and their scores (cached in scores.json)."""

    def __init__(self, root: str, data_path: str):
        self.root, self.data_path = root, data_path
        os.makedirs(root, exist_ok=True)
        self.scores_path = os.path.join(root, "scores.json")
        self.scores: Dict[str, Any] = json.load(open(self.scores_path)) if os.path.exists(self.scores_path) else {}

    def run(self, name: str, method: str, settings: Dict[str, Any]) -> str:
        """Trains (or reuses, or resumes) the run `name`; returns its model directory."""
        from common.training.registry import build_config
        from common.training.runs import train

        root = os.path.join(self.root, "runs", name)
        models = os.path.join(root, "model")
        done = sorted(os.listdir(models)) if os.path.isdir(models) else []
        if done:
            return os.path.join(models, done[-1])
        ckpt = os.path.join(root, "ckpt")
        started = sorted(os.listdir(ckpt)) if os.path.isdir(ckpt) else []
        config = build_config(method, {**settings, "data_path": self.data_path, "artifacts_dir": root,
                                       "checkpoint_every": 100, "log_every": 50, "eval_each_epoch": False})
        if started:
            logging.info("Resuming %s (%s).", name, started[-1])
            config = config.replace(resume=started[-1])
        began = time.time()
        result = train(config)
        self.scores.setdefault(name, {})["train_seconds"] = round(time.time() - began, 1)
        self.scores[name]["metrics"] = result["metrics"]
        self._save()
        return result["model_dir"]

    def score(self, name: str, model_dir: str, pooling: str = None) -> Dict[str, Any]:
        """STS (seven-set average, STS-B dev) and the SentEval fast average of a model, cached."""
        entry = self.scores.setdefault(name, {})
        if "sts_avg" in entry:
            return entry
        from common.evaluation.embedding import embed_sentences
        from common.evaluation.senteval import evaluate_senteval, get_config
        from common.evaluation.sts import evaluate_sts
        from common.models.encoder import EncoderConfig, build_encoder
        import tensorflow as tf

        encoder = build_encoder(EncoderConfig(spec=model_dir, pooling=pooling))
        fn = tf.function(encoder.embed_strings, input_signature=[tf.TensorSpec([None], tf.string)])
        sts = evaluate_sts(lambda s: embed_sentences(fn, s, 128, progress=False), self.data_path)
        entry.update(sts_avg=sts["avg"], stsb_dev=sts["stsb"]["dev"], sts=sts)
        if FLAGS.senteval_tasks:
            se = evaluate_senteval(lambda s, desc: embed_sentences(fn, s, 128, progress=False), self.data_path,
                                   FLAGS.senteval_tasks, get_config("fast"), model_name=name)
            entry.update(senteval_avg=se["averages"]["downstream"]["test"],
                         senteval={t: r for t, r in se["tasks"].items()})
        self._save()
        logging.info("%s: STS avg %.2f, STS-B dev %.2f, SentEval %s", name, entry["sts_avg"], entry["stsb_dev"],
                     entry.get("senteval_avg"))
        return entry

    def _save(self) -> None:
        tmp = self.scores_path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.scores, f, indent=1)
        os.replace(tmp, self.scores_path)


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    ladder = Ladder(FLAGS.artifacts_dir, FLAGS.data_path)
    stages = set(FLAGS.stages)
    began = time.time()
    raw = ladder.run("pretrain", "mlm", dict(
        model=FLAGS.encoder, batch_size=FLAGS.pretrain_batch, train_epochs=1,
        train_steps_per_epoch=FLAGS.pretrain_steps, train_lr=FLAGS.pretrain_lr))
    if "raw" in stages:
        ladder.score("raw (mean)", raw, pooling="mean")
        ladder.score("raw (CLS)", raw, pooling="cls")
    unsup_settings = dict(model=raw, train_steps_per_epoch=FLAGS.simcse_steps)
    if "simcse" in stages:
        unsup = ladder.run("simcse unsup", "simcse", unsup_settings)
        ladder.score("simcse unsup", unsup)
        sup = ladder.run("simcse sup", "simcse", dict(model=raw, simcse_mode="sup", train_data=NLI_OFFLINE,
                                                      batch_size=64, train_epochs=1,
                                                      train_steps_per_epoch=FLAGS.simcse_steps))
        ladder.score("simcse sup", sup)
    if "pause" in stages:
        common = dict(model=raw, train_data=NLI_OFFLINE, batch_size=64, max_seq_len=64, train_epochs=4,
                      train_steps_per_epoch=FLAGS.pause_steps // 4)
        for seed in FLAGS.seeds:
            for pct in FLAGS.percentages:
                for kind, extra in (("pause", {}), ("supervised", dict(annealing="off", labeled_batch_fraction=1.0))):
                    name = f"{kind} {pct}% seed {seed}"
                    ladder.score(name, ladder.run(name, "pause", dict(common, seed=int(seed),
                                                                      pos_sample_prec=float(pct), **extra)))
        name = "pause 5% per-epoch annealing seed 0"
        ladder.score(name, ladder.run(name, "pause", dict(common, pos_sample_prec=5.0, annealing="per_epoch")))
    if "declutr" in stages:
        spans = dict(model=raw, batch_size=8, max_seq_len=128, min_span_len=16, max_span_len=96,
                     train_steps_per_epoch=FLAGS.declutr_steps)
        for name, extra in (("declutr contrastive + MLM", {}), ("declutr contrastive only", dict(mlm=False)),
                            ("declutr MLM only", dict(contrastive=False))):
            ladder.score(name, ladder.run(name, "declutr", dict(spans, **extra)))
    from common.training import registry

    if "trans_encoder" in stages and "trans_encoder" in registry.methods():
        logging.info("Trans-Encoder is registered; its rung runs from the SimCSE unsup model.")
        te = ladder.run("trans_encoder", "trans_encoder",
                        dict(model=ladder.run("simcse unsup", "simcse", unsup_settings)))
        ladder.score("trans_encoder (bi)", te)
    print(report(ladder.scores))
    print(f"wall time this invocation: {time.time() - began:.0f} s")


def _mean_std(values: List[float]) -> str:
    import numpy as np

    return f"{np.mean(values):.2f} ± {np.std(values):.2f}" if len(values) > 1 else f"{values[0]:.2f}"


def report(scores: Dict[str, Any]) -> str:
    """The results table (PAUSE and supervised-only rows as mean ± std over seeds)."""
    lines = ["| model | STS avg | STS-B dev | SentEval avg |", "| --- | --- | --- | --- |"]
    groups: Dict[str, List[Dict[str, Any]]] = {}
    for name, entry in scores.items():
        if "sts_avg" in entry:
            groups.setdefault(name.split(" seed ")[0], []).append(entry)
    for name, entries in groups.items():
        cells = [_mean_std([e[k] for e in entries]) if all(e.get(k) is not None for e in entries) else "-"
                 for k in ("sts_avg", "stsb_dev", "senteval_avg")]
        lines.append(f"| {name} ({len(entries)} seed{'s' if len(entries) > 1 else ''}) | " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    app.run(main)
