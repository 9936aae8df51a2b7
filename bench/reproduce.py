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

from common import cli

from bench.machine import busy_seconds, machine_busy_ticks, other_cores, process_ticks

flags.DEFINE_string("data_path", "data", "Data root (downstream/, documents/gutenberg/).")
flags.DEFINE_string("artifacts_dir", "artifacts/reproduce", "Where the ladder's runs and results are written.")
flags.DEFINE_list("stages", ["pretrain", "raw", "simcse", "pause", "declutr", "trans_encoder"], "Stages to run.")
flags.DEFINE_string("encoder", "bert_tiny", "Fresh BERT to pretrain (bert_tiny, bert_mini, ...).")
flags.DEFINE_integer("pretrain_steps", 1000, "Masked-LM steps (split into --pretrain_epochs; held-out loss each epoch).")
flags.DEFINE_integer("pretrain_epochs", 4, "Masked-LM epochs (the held-out books are scored at each epoch end).")
flags.DEFINE_integer("pretrain_batch", 64, "Masked-LM windows (of 128 tokens) per step.")
flags.DEFINE_float("pretrain_lr", 5e-4, "Masked-LM peak learning rate.")
flags.DEFINE_float("finetune_lr", 1e-4, "Peak learning rate of every rung trained from the pretrained model.")
flags.DEFINE_integer("simcse_steps", 500, "SimCSE steps (unsup: 64 sentences; sup: 64 triples).")
flags.DEFINE_integer("pause_steps", 200, "PAUSE and supervised-only steps of 64 pairs.")
flags.DEFINE_list("percentages", ["1", "5", "10", "30", "100"], "Label percentages for PAUSE and supervised-only.")
flags.DEFINE_list("seeds", ["0", "1", "2"], "Seeds of the PAUSE and supervised-only rows.")
flags.DEFINE_integer("declutr_steps", 300, "DeCLUTR steps of 8 documents.")
flags.DEFINE_integer("te_cycles", 2, "Trans-Encoder cycles.")
flags.DEFINE_integer("te_steps", 200, "Trans-Encoder steps per phase (caps each phase's epoch).")
flags.DEFINE_list("senteval_tasks", ["MR", "CR", "SUBJ", "MPQA"], "SentEval tasks (fast setting).")
flags.DEFINE_list("senteval_seeds", ["0"], "Seeds whose PAUSE and supervised-only models get SentEval too (all "
                  "models of the other rungs do).")
flags.DEFINE_list("senteval_percentages", ["5", "100"], "Label percentages whose PAUSE and supervised-only models "
                  "get SentEval (for --senteval_seeds).")
FLAGS = flags.FLAGS

NLI_OFFLINE = ("senteval:dev", "senteval:test")
PERCENT_ROWS = ("pause", "supervised")


class Ladder:
    """Runs (cached in their own artifacts roots) and their scores (cached in scores.json).

    Several ladder processes may share one root (e.g. `--stages=pause` beside
    `--stages=simcse,declutr` once the pretraining is done): scores are merged
    into scores.json under a file lock, each process writing only its own rows.
    """

    def __init__(self, root: str, data_path: str):
        self.root, self.data_path = root, data_path
        os.makedirs(root, exist_ok=True)
        self.scores_path = os.path.join(root, "scores.json")
        self.scores: Dict[str, Any] = self._load()
        self.touched: set = set()
        # This invocation's wall-clock interval and the highest 1-minute load average seen at a save,
        # recorded in _meta so a ladder finished over several invocations adds up its busy time.
        self.began = time.time()
        self.invocation = f"{time.strftime('%Y%m%d-%H%M%S', time.gmtime(self.began))}-{os.getpid()}"
        self.max_load = os.getloadavg()[0]
        # The load average counts the ladder's own threads; the CPU other processes used (machine
        # busy time minus this process's, averaged over the invocation so far) says whether it ran alone.
        self.cpu_start = (self.began, machine_busy_ticks(), process_ticks())

    def _load(self) -> Dict[str, Any]:
        return json.load(open(self.scores_path)) if os.path.exists(self.scores_path) else {}

    def run(self, name: str, method: str, settings: Dict[str, Any], evaluator=None) -> str:
        """Trains (or reuses, or resumes) the run `name`; returns its model directory."""
        from common.training.registry import build_config
        from common.training.runs import train

        root = os.path.join(self.root, "runs", name)
        models = os.path.join(root, "model")
        done = sorted(d for d in os.listdir(models) if not d.startswith(".")) if os.path.isdir(models) else []
        if done:
            return os.path.join(models, done[-1])
        ckpt = os.path.join(root, "ckpt")
        started = sorted(os.listdir(ckpt)) if os.path.isdir(ckpt) else []
        config = build_config(method, {"checkpoint_every": 100, "log_every": 25, "eval_each_epoch": False,
                                       **settings, "data_path": self.data_path, "artifacts_dir": root})
        if started:
            logging.info("Resuming %s (%s).", name, started[-1])
            config = config.replace(resume=started[-1])
        began = time.time()
        result = train(config, evaluator)
        entry = self.scores.setdefault(name, {})
        # A resumed run's seconds are those of its last piece; config.json has the total.
        entry.update(train_seconds=round(time.time() - began, 1), metrics=result["metrics"],
                     run_id=result["run_id"], settings={k: v for k, v in settings.items() if k != "model"})
        self._save(name)
        return result["model_dir"]

    def score(self, name: str, model_dir: str, pooling: str = None, senteval: bool = True) -> Dict[str, Any]:
        """STS (seven-set average, STS-B dev) and, if `senteval`, the SentEval fast average of a model, cached."""
        entry = self.scores.setdefault(name, {})
        if "sts_avg" in entry and (not senteval or not FLAGS.senteval_tasks or "senteval_avg" in entry):
            return entry
        from common.evaluation.embedding import embed_sentences
        from common.evaluation.senteval import evaluate_senteval, get_config
        from common.evaluation.sts import evaluate_sts
        from common.models.encoder import EncoderConfig, build_encoder
        import tensorflow as tf

        encoder = build_encoder(EncoderConfig(spec=model_dir, pooling=pooling))
        fn = encoder.embedding_function()
        if "sts_avg" not in entry:
            sts = evaluate_sts(lambda s: embed_sentences(fn, s, 128, progress=False), self.data_path)
            entry.update(sts_avg=sts["avg"], stsb_dev=sts["stsb"]["dev"], sts=sts)
        if senteval and FLAGS.senteval_tasks:
            se = evaluate_senteval(lambda s, desc: embed_sentences(fn, s, 128, progress=False), self.data_path,
                                   FLAGS.senteval_tasks, get_config("fast"), model_name=name)
            entry.update(senteval_avg=se["averages"]["downstream"]["test"],
                         senteval={t: r for t, r in se["tasks"].items()}, senteval_seconds=se["seconds"])
        self._save(name)
        logging.info("%s: STS avg %.2f, STS-B dev %.2f, SentEval %s", name, entry["sts_avg"], entry["stsb_dev"],
                     entry.get("senteval_avg"))
        return entry

    def score_cross(self, name: str, model_dir: str) -> Dict[str, Any]:
        """STS of a Trans-Encoder run's cross-encoder (test_sts.py --mode=cross), cached."""
        entry = self.scores.setdefault(name, {})
        if "sts_avg" in entry:
            return entry
        from common.evaluation.resolve import resolve_cross_model
        from common.evaluation.sts import evaluate_sts_pairs

        scorer = resolve_cross_model(model_dir)
        sts = evaluate_sts_pairs(lambda a, b: scorer.score(a, b, 128, progress=False), self.data_path)
        entry.update(sts_avg=sts["avg"], stsb_dev=sts["stsb"]["dev"], sts=sts)
        self._save(name)
        logging.info("%s: STS avg %.2f, STS-B dev %.2f", name, entry["sts_avg"], entry["stsb_dev"])
        return entry

    def _save(self, name: str) -> None:
        import fcntl

        with open(self.scores_path + ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            merged = self._load()
            self.touched.add(name)
            merged.update({k: self.scores[k] for k in self.touched})
            meta = merged.setdefault("_meta", {})
            meta["updated"] = time.time()
            self.max_load = max(self.max_load, os.getloadavg()[0])
            invocation = dict(start=self.began, seconds=round(meta["updated"] - self.began, 1),
                              max_load1=round(self.max_load, 2))
            busy = machine_busy_ticks()
            if busy is not None and self.cpu_start[1] is not None:
                invocation["other_cores"] = other_cores(self.cpu_start, (meta["updated"], busy, process_ticks()))
            meta.setdefault("invocations", {})[self.invocation] = invocation
            self.scores = merged
            tmp = self.scores_path + f".tmp{os.getpid()}"
            with open(tmp, "w") as f:
                json.dump(self.scores, f, indent=1)
            os.replace(tmp, self.scores_path)


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    from common.training import registry

    ladder = Ladder(FLAGS.artifacts_dir, FLAGS.data_path)
    stages = set(FLAGS.stages)
    began = time.time()
    epochs = FLAGS.pretrain_epochs
    raw = ladder.run("pretrain", "mlm", dict(
        model=FLAGS.encoder, batch_size=FLAGS.pretrain_batch, train_epochs=epochs,
        train_steps_per_epoch=FLAGS.pretrain_steps // epochs, train_lr=FLAGS.pretrain_lr, eval_each_epoch=True,
        checkpoint_every=50))
    lr = FLAGS.finetune_lr
    if "raw" in stages:
        ladder.score("raw (mean)", raw, pooling="mean")
        ladder.score("raw (CLS)", raw, pooling="cls")
    unsup_settings = dict(model=raw, train_lr=lr, train_steps_per_epoch=FLAGS.simcse_steps)
    if "simcse" in stages:
        unsup = ladder.run("simcse unsup", "simcse", unsup_settings)
        ladder.score("simcse unsup", unsup)
        ladder.score("simcse unsup (mean pooling)", unsup, pooling="mean", senteval=False)
        sup = ladder.run("simcse sup", "simcse", dict(model=raw, simcse_mode="sup", train_data=NLI_OFFLINE,
                                                      batch_size=64, train_epochs=1, train_lr=lr,
                                                      train_steps_per_epoch=FLAGS.simcse_steps))
        ladder.score("simcse sup", sup)
    if "pause" in stages:
        common = dict(model=raw, train_data=NLI_OFFLINE, batch_size=64, max_seq_len=64, train_epochs=4,
                      train_lr=lr, train_steps_per_epoch=FLAGS.pause_steps // 4)
        for seed in FLAGS.seeds:
            for pct in FLAGS.percentages:
                for kind, extra in (("pause", {}), ("supervised", dict(annealing="off", labeled_batch_fraction=1.0))):
                    name = f"{kind} {pct}% seed {seed}"
                    model = ladder.run(name, "pause", dict(common, seed=int(seed), pos_sample_prec=float(pct), **extra))
                    ladder.score(name, model, senteval=seed in FLAGS.senteval_seeds
                                 and pct in FLAGS.senteval_percentages)
        name = "pause 5% per-epoch annealing seed 0"
        ladder.score(name, ladder.run(name, "pause", dict(common, pos_sample_prec=5.0, annealing="per_epoch")))
    if "declutr" in stages:
        spans = dict(model=raw, batch_size=8, max_seq_len=128, min_span_len=16, max_span_len=96, train_lr=lr,
                     train_steps_per_epoch=FLAGS.declutr_steps)
        for name, extra in (("declutr contrastive + MLM", {}), ("declutr contrastive only", dict(mlm=False)),
                            ("declutr MLM only", dict(contrastive=False))):
            ladder.score(name, ladder.run(name, "declutr", dict(spans, **extra)))
    if "trans_encoder" in stages and "trans_encoder" in registry.methods():
        from common.evaluation.evaluators import StsbDevEvaluator

        start = ladder.run("simcse unsup", "simcse", unsup_settings)
        # The official protocol selects the best cycle on STS-B dev (labels used for nothing else).
        te = ladder.run("trans_encoder", "trans_encoder",
                        dict(model=start, cycles=FLAGS.te_cycles, train_epochs=1, train_steps_per_epoch=FLAGS.te_steps,
                             train_lr=lr, cross_lr=lr, eval_each_epoch=True),
                        evaluator=StsbDevEvaluator(FLAGS.data_path, progress=False))
        ladder.score("trans_encoder bi", te)
        ladder.score_cross("trans_encoder cross", te)
    results = write_results(ladder.scores, FLAGS.artifacts_dir)
    print(results)
    print(f"wall time this invocation: {time.time() - began:.0f} s")


# === Results: table, claims, plots ===

def _mean_std(values: List[float]) -> str:
    import numpy as np

    return f"{np.mean(values):.2f} ± {np.std(values):.2f}" if len(values) > 1 else f"{values[0]:.2f}"


def _order(name: str):
    """The ladder's order: raw, SimCSE, PAUSE and supervised-only by percentage, DeCLUTR, Trans-Encoder."""
    rungs = ("raw", "simcse", "pause", "supervised", "declutr", "trans_encoder")
    rung = next((i for i, r in enumerate(rungs) if name.startswith(r)), len(rungs))
    if rung in (2, 3):
        pct = name.split("%")[0].split()[-1]
        return (2, float(pct) if pct.replace(".", "", 1).isdigit() else 1e9, rung, name)
    return (rung, 0.0, 0, name)


def _groups(scores: Dict[str, Any]) -> Dict[str, List[Dict[str, Any]]]:
    groups: Dict[str, List[Dict[str, Any]]] = {}
    for name, entry in scores.items():
        if isinstance(entry, dict) and "sts_avg" in entry:
            groups.setdefault(name.split(" seed ")[0], []).append(entry)
    return dict(sorted(groups.items(), key=lambda item: _order(item[0])))


def report(scores: Dict[str, Any]) -> str:
    """The results table (PAUSE and supervised-only rows as mean ± std over seeds)."""
    lines = ["| model | seeds | STS avg | STS-B dev | SentEval avg | train s |", "| --- | --- | --- | --- | --- | --- |"]
    for name, entries in _groups(scores).items():
        cells = []
        for key in ("sts_avg", "stsb_dev", "senteval_avg"):
            values = [e[key] for e in entries if e.get(key) is not None]
            note = f" ({len(values)} seed)" if 0 < len(values) < len(entries) else ""
            cells.append(_mean_std(values) + note if values else "-")
        seconds = [e["train_seconds"] for e in entries if "train_seconds" in e]
        cells.append(f"{sum(seconds) / len(seconds):.0f}" if seconds else "-")
        lines.append(f"| {name} | {len(entries)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _mean(groups, name: str, key: str = "sts_avg"):
    import numpy as np

    values = [e[key] for e in groups.get(name, []) if e.get(key) is not None]
    return float(np.mean(values)) if values else None


def _fmt(value) -> str:
    return "not run" if value is None else f"{value:.2f}"


def claims(scores: Dict[str, Any]) -> List[str]:
    """Each paper claim as one line: held / did not hold / not run, with the numbers (STS avg)."""
    g = _groups(scores)
    m = lambda name: _mean(g, name)  # noqa: E731
    out = []

    def line(claim: str, held, detail: str) -> None:
        verdict = "not run" if held is None else ("HELD" if held else "DID NOT HOLD")
        out.append(f"- {claim}: **{verdict}** ({detail})")

    def seeds(name: str) -> str:
        n = len(g.get(name, []))
        return f"{n} seed{'s' if n != 1 else ''}"

    pcts = [p for p in FLAGS.percentages if float(p) <= 30]
    pairs = [(p, m(f"pause {p}%"), m(f"supervised {p}%")) for p in pcts]
    done = [(p, a, b) for p, a, b in pairs if a is not None and b is not None]
    missing = [p for p, a, b in pairs if a is None or b is None]
    detail = "; ".join(f"{p} %: {a:.2f} vs {b:.2f} ({seeds(f'pause {p}%')})" for p, a, b in done)
    if missing:
        detail += f"; not run yet at {', '.join(missing)} %"
    line("PAUSE >= supervised-only at every label percentage <= 30 %"
         + (" (so far)" if missing and done else ""),
         None if not done else (False if any(a < b for _, a, b in done) else (None if missing else True)), detail)
    p5, s100 = m("pause 5%"), m("supervised 100%")
    line("PAUSE at 5 % within 2 points of supervised at 100 %", None if p5 is None or s100 is None else
         abs(p5 - s100) <= 2.0 or p5 > s100, f"{_fmt(p5)} vs {_fmt(s100)}")
    raw = max([v for v in (m("raw (mean)"), m("raw (CLS)")) if v is not None], default=None)
    un, sup, un_mean = m("simcse unsup"), m("simcse sup"), m("simcse unsup (mean pooling)")
    mean_note = "" if un_mean is None else f"; with mean pooling {un_mean:.2f}"
    line("SimCSE unsup far (>= 5 points) above the raw model", None if un is None or raw is None else un >= raw + 5,
         f"{_fmt(un)} vs best raw pooling {_fmt(raw)}{mean_note}")
    line("SimCSE sup above SimCSE unsup", None if un is None or sup is None else sup > un,
         f"{_fmt(sup)} vs {_fmt(un)}")
    both, con, mlm = m("declutr contrastive + MLM"), m("declutr contrastive only"), m("declutr MLM only")
    line("DeCLUTR (contrastive + MLM) above the raw model", None if both is None or raw is None else both > raw,
         f"{_fmt(both)} vs {_fmt(raw)}")
    line("DeCLUTR contrastive + MLM above contrastive only and MLM only",
         None if None in (both, con, mlm) else both > max(con, mlm),
         f"{_fmt(both)} vs {_fmt(con)} and {_fmt(mlm)}")
    bi, cross = m("trans_encoder bi"), m("trans_encoder cross")
    line("Trans-Encoder bi-encoder above its SimCSE start", None if bi is None or un is None else bi > un,
         f"{_fmt(bi)} vs {_fmt(un)}")
    line("Trans-Encoder cross-encoder above its SimCSE start", None if cross is None or un is None else cross > un,
         f"{_fmt(cross)} vs {_fmt(un)}")
    return out


def _scalars(run_root: str, tag: str):
    """(steps, values) of a scalar in a run's TensorBoard event files (every piece of a resumed run, and a
    phased run's phases end to end), read by `common.training.curves` as the run's own picture is."""
    import glob

    from common.training.curves import read_scalars, series

    steps, values = [], []
    for log_dir in sorted(glob.glob(os.path.join(run_root, "log", "*"))):
        found = series(read_scalars(log_dir), tag)
        steps += found.steps
        values += found.values
    return steps, values


def plot(scores: Dict[str, Any], root: str) -> List[str]:
    """sts_vs_labels.png (PAUSE vs supervised-only, mean ± std over seeds) and training_curves.png."""
    import numpy as np

    from common.figures import new_figure, write_png

    written = []
    g = _groups(scores)
    pcts = [p for p in FLAGS.percentages if g.get(f"pause {p}%") and g.get(f"supervised {p}%")]
    if pcts:
        fig = new_figure((6, 4), dpi=120)
        ax = fig.subplots()
        for kind, marker in (("pause", "o"), ("supervised", "s")):
            values = [[e["sts_avg"] for e in g[f"{kind} {p}%"]] for p in pcts]
            ax.errorbar([float(p) for p in pcts], [np.mean(v) for v in values], yerr=[np.std(v) for v in values],
                        marker=marker, capsize=3, label="PAUSE" if kind == "pause" else "supervised-only")
        for name, style in (("simcse unsup", ":"), ("raw (mean)", "--")):
            if g.get(name):
                ax.axhline(g[name][0]["sts_avg"], linestyle=style, color="grey", label=name)
        ax.set_xscale("log")
        ax.set_xticks([float(p) for p in pcts], [f"{p}%" for p in pcts])
        ax.set_xlabel("labelled NLI pairs kept")
        ax.set_ylabel("STS avg (Spearman x100, 7 sets)")
        ax.set_title("PAUSE vs supervised-only from the pretrained BERT-tiny")
        ax.legend(fontsize=8)
        fig.tight_layout()
        path = os.path.join(root, "sts_vs_labels.png")
        write_png(fig, path)
        written.append(path)
    curves = [("pretrain", "train/loss", "masked-LM loss"), ("pretrain", "eval/heldout_loss", "held-out masked-LM loss"),
              ("pretrain", "eval/heldout_accuracy", "held-out masked-LM accuracy"),
              ("simcse unsup", "train/loss", "SimCSE unsup loss"), ("simcse sup", "train/loss", "SimCSE sup loss"),
              ("pause 5% seed 0", "train/loss", "PAUSE 5 % loss"),
              ("supervised 5% seed 0", "train/loss", "supervised-only 5 % loss"),
              ("declutr contrastive + MLM", "train/loss", "DeCLUTR contrastive + MLM loss")]
    panels = []
    for run, tag, label in curves:
        run_root = os.path.join(root, "runs", run)
        if os.path.isdir(run_root):
            steps, values = _scalars(run_root, tag)
            if steps:
                panels.append((label, steps, values))
    if panels:
        cols = 3
        rows = (len(panels) + cols - 1) // cols
        fig = new_figure((4 * cols, 3 * rows), dpi=100)
        axes = fig.subplots(rows, cols, squeeze=False)
        for ax, (label, steps, values) in zip(axes.flat, panels):
            ax.plot(steps, values, marker="." if len(steps) < 20 else None)
            ax.set_title(label, fontsize=9)
            ax.set_xlabel("step", fontsize=8)
        for ax in list(axes.flat)[len(panels):]:
            ax.axis("off")
        fig.tight_layout()
        path = os.path.join(root, "training_curves.png")
        write_png(fig, path)
        written.append(path)
    return written


def _first_run_start(root: str):
    """The start (seconds since the epoch, UTC) of the ladder's first run, from its run ID."""
    import calendar
    import datetime
    import glob

    ids = [os.path.basename(p) for p in glob.glob(os.path.join(root, "runs", "*", "ckpt", "*"))]
    stamps = [calendar.timegm(datetime.datetime.strptime(i, "%Y%m%d-%H%M%S").timetuple())
              for i in ids if len(i) == 15 and i[8] == "-"]
    return min(stamps) if stamps else None


def write_results(scores: Dict[str, Any], root: str) -> str:
    """results.md in the artifacts root: table, claim lines, pretraining throughput, plots."""
    lines = [report(scores), "", *claims(scores)]
    pre = scores.get("pretrain", {})
    if "train_seconds" in pre:
        s = pre["settings"]
        tokens = s["batch_size"] * s["train_epochs"] * s["train_steps_per_epoch"] * 128
        metrics = pre.get("metrics", {})
        seconds = metrics.get("seconds", pre["train_seconds"])
        lines += ["", f"Pretraining: {s['train_epochs'] * s['train_steps_per_epoch']} steps of {s['batch_size']} "
                      f"windows of 128 tokens ({tokens / 1e6:.2f} M tokens) in {seconds:.0f} s of training "
                      f"({tokens / seconds:.0f} tokens/s); last training loss {metrics.get('loss', float('nan')):.3f}, "
                      f"held-out masked-LM loss {metrics.get('heldout_loss', float('nan')):.3f} and accuracy "
                      f"{100 * metrics.get('heldout_accuracy', float('nan')):.1f} %."]
    first = _first_run_start(root)
    meta = scores.get("_meta", {})
    trained = sum(e.get("train_seconds", 0.0) for k, e in scores.items() if isinstance(e, dict) and k != "_meta")
    if trained:
        lines.append(f"Training time of all runs (each with its end-of-run evaluation; a resumed run counts its "
                     f"last piece): {trained:.0f} s.")
    if first and meta.get("updated"):
        lines.append(f"Ladder wall time: {meta['updated'] - first:.0f} s from its first run's start to its last "
                     "result, interruptions and the time between sessions included.")
    busy = busy_seconds(meta.get("invocations", {}))
    if busy:
        invocations = meta["invocations"].values()
        lines.append(f"Ladder busy time: {busy:.0f} s, the union of the wall-clock intervals of its "
                     f"{len(invocations)} invocation(s) (each from its start to its last saved result); highest "
                     f"1-minute load average seen at a save (the ladder's own threads included): "
                     f"{max(i['max_load1'] for i in invocations):.2f}"
                     + ("" if not all("other_cores" in i for i in invocations) else
                        f"; CPU used by other processes, averaged over each invocation: at most "
                        f"{max(i['other_cores'] for i in invocations):.2f} cores") + ".")
    lines += [f"![{os.path.basename(p)}]({os.path.basename(p)})" for p in plot(scores, root)]
    text = "\n".join(lines)
    with open(os.path.join(root, "results.md"), "w") as f:
        f.write(text + "\n")
    return text


if __name__ == "__main__":
    cli.run(main)
