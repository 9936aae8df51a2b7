"""Your task, judged: a few-label paraphrase task, set up as a user sets it up, and what helps there.

    .venv/bin/python -m bench.your_task --data_path=../shared/data

The task is Microsoft's Research Paraphrase Corpus (SentEval's copy, `downstream/MRPC`) as a researcher
with few labels has it. MRPC train is split once, by `--split_seed`: `--dev_percent` of its pairs are the
user's dev set (labels kept); of the rest, the pool, `--label_percent` keep their label and the others get
an empty label cell (unlabelled). The split files are written as the corpus ships (the header line, its
byte-order mark included, is copied unchanged), so every run reads them through the toolkit's tables as a
user's would. MRPC test, as it ships, scores every model.

Rows, from each of `--starts` (its learning rate from `--train_lrs`) and, when trained, each of `--seeds`:
- start: the untrained start (a fixed model: no seeds);
- supervised: supervised-only on the kept labels, bench/reproduce.py's "supervised" rows: PAUSE's trainer
  with the PU term off and all-labelled batches (`annealing=off`, `labeled_batch_fraction=1`);
- pause: PAUSE on the kept labels and the unlabelled pool (`--labels=0,1`, the class priors estimated
  from the kept labels, as the CLI does);
- simcse: unsup SimCSE on the pool's sentences (every train sentence outside the dev set).

Each trained run scores the dev set every `--pause_eval_every` or `--simcse_eval_every` steps with the
evaluator `train.py --dev_data`
builds for 0/1 labels (primary metric dev_average_precision) and publishes its best step
(`--publish_best`). Every model is scored on MRPC test as `test_sts.py --pairs` scores 0/1 pairs:
average precision, and F1 and accuracy at their best cosine thresholds. Each claim ("PAUSE above
supervised-only", "PAUSE above the start", "SimCSE above the start", per start) gets a verdict by
bench.verdicts' rule on test average precision.

Runs live under `--artifacts_dir/runs/<name>/` (bench.reproduce's Ladder): a finished run is reused, an
interrupted one resumed from its last checkpoint, so a killed benchmark continues where it stopped; a
fresh artifacts directory starts from the page's results.json. `--probe_steps` times the rows that have
no score yet, so that the page says the CPU time they need here. Not part of the test suite.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from typing import Any, Dict, List, Optional, Sequence

from absl import flags, logging

import numpy as np

from common import cli

from bench import pages, reproduce, verdicts
from bench.harness import busy_seconds
from common.errors import UserError

FLAGS = flags.FLAGS

TRAIN_FILE = os.path.join("downstream", "MRPC", "msr_paraphrase_train.txt")
TEST_FILE = os.path.join("downstream", "MRPC", "msr_paraphrase_test.txt")
# The MRPC columns as a user maps them: train.py's pair fields (--columns), and the pair fields of
# test_sts.py --pairs and train.py --dev_columns (a 0/1 "score" is a label).
TRAIN_COLUMNS = ("premise:#1 String", "hypothesis:#2 String", "label:Quality")
PAIR_COLUMNS = ("sentence1:#1 String", "sentence2:#2 String", "score:Quality")
LABELS = ("0", "1")
# MRPC's label is its first column (Quality): the cell a hidden label empties.
LABEL_CELL = 0
KINDS = ("start", "supervised", "pause", "simcse")
TRAINED = KINDS[1:]
TITLES = {"start": "the start (untrained)", "supervised": "supervised-only (kept labels)",
          "pause": "PAUSE (kept labels + unlabelled pool)", "simcse": "SimCSE unsup (pool sentences)"}
# Supervised-only exactly as the reproduction ladder trains it: PAUSE's trainer, no PU term, all-labelled batches.
SUPERVISED = dict(reproduce.PAUSE_FAMILY)["supervised"]
# The test metrics the page shows (the evaluator's keys, fractions), AP first: the verdicts judge it.
METRICS = (("test_average_precision", "AP"), ("test_f1", "F1"), ("test_accuracy", "accuracy"))
CURVE_TAGS = {"dev_ap": "eval/dev_average_precision", "loss": "train/loss", "accuracy": "train/accuracy",
              "pu_weight": "train/pu_weight"}


def define_flags() -> None:
    """The benchmark's flags, defined when it runs, not at import (see bench/harness.py)."""
    flags.DEFINE_string("data_path", "data", "Data root (downstream/MRPC/; a --starts path not found as given is "
                        "looked up under it).")
    flags.DEFINE_string("artifacts_dir", "artifacts/your_task", "Where the split files, the runs "
                        "and scores.json are written.")
    flags.DEFINE_string("results_dir", "docs/benchmarks/your_task", "Where the page (README.md), "
                        "its figure and results.json are written.")
    flags.DEFINE_list("starts", ["minilm", "starts/bert_mini_books"], "Models every row starts "
                      "from (--model values).")
    flags.DEFINE_list("train_lrs", ["2e-5", "1e-4"], "Peak learning rate of the trained rows, one per --starts: "
                      "MiniLM's own fine-tuning rate (sentence-transformers' 2e-5) and the reproduction ladder's "
                      "1e-4 for the raw BERT-mini.")
    flags.DEFINE_list("rows", list(KINDS), f"Rows to run now ({', '.join(KINDS)}); the page lists every row.")
    flags.DEFINE_list("seeds", ["0", "1", "2"], "Seeds of the trained rows (the verdicts need 3).")
    flags.DEFINE_integer("split_seed", 0, "Seed of the dev split and of the labels kept.")
    flags.DEFINE_float("dev_percent", 10.0, "Percent of MRPC train held out as the user's dev set.")
    flags.DEFINE_float("label_percent", 5.0, "Percent of the remaining pairs (the pool) that keep their label.")
    # The budgets come from the dev curves of the probe page (docs/benchmarks/your_task/probe/README.md), which
    # the page's setting paragraph quotes: each default lies past the step where the probe's dev AP peaked.
    flags.DEFINE_integer("pause_steps", 200, "PAUSE and supervised-only steps of --pause_batch pairs (past the "
                         "probe's dev peak and the memorisation of the kept labels).", lower_bound=1)
    flags.DEFINE_integer("pause_batch", 32, "PAUSE and supervised-only: pairs per step.", lower_bound=2)
    flags.DEFINE_integer("simcse_steps", 400, "SimCSE steps of --simcse_batch sentences (past the probe's "
                         "plateau).", lower_bound=1)
    flags.DEFINE_integer("simcse_batch", 64, "SimCSE: sentences per step (the paper's 64).", lower_bound=2)
    flags.DEFINE_integer("pause_eval_every", 10, "PAUSE and supervised-only: steps between dev evaluations (the "
                         "best is published); fine, for an early peak.", lower_bound=1)
    flags.DEFINE_integer("simcse_eval_every", 25, "SimCSE: steps between dev evaluations (the best is published).",
                         lower_bound=1)
    flags.DEFINE_integer("max_seq_len", 64, "Training length in tokens (no MRPC sentence has more than 54 with "
                         "either start's vocabulary); models are scored untruncated.", lower_bound=8)
    from simcse_tf.config import POOLINGS

    flags.DEFINE_enum("simcse_pooling", "mean", POOLINGS, "SimCSE --pooling: mean, the pooling of the start and of "
                      "every other row (docs/benchmarks/ablation/simcse: MiniLM read out by CLS loses STS).")
    flags.DEFINE_integer("probe_steps", 0, "Time this many training steps of each planned row kind that has rows "
                         "without a score (seed 0), so that the page says the CPU time they need; 0: none.",
                         lower_bound=0)


# === The split ===

def start_label(spec: str) -> str:
    """A start's name on the page: a path's last folder, else the spec."""
    return os.path.basename(spec.rstrip("/")) or spec


def resolve_start(spec: str, data_path: str) -> str:
    """A `--starts` entry as a `--model` value: a path (it has a `/`) not found as given is taken under `data_path`."""
    if "/" in spec and not os.path.isabs(spec) and not os.path.exists(spec):
        return os.path.join(data_path, spec)
    return spec


def write_split(train_file: str, out_dir: str, seed: int, dev_percent: float, label_percent: float) -> Dict[str, Any]:
    """Writes the user's files from MRPC train: `dev.tsv` (the held-out pairs, labelled) and `pool.tsv` (the other
    pairs, `label_percent` % of them with their label, the rest with an empty label cell).

    Lines are copied byte for byte (the header's byte-order mark included; the toolkit's reader handles it), in
    the file's order; only the hidden labels' cells are emptied. The pairs held out and the labels kept are
    simple random samples drawn with `seed`.

    Returns:
        The split's record: the files, the settings and the counts.
    """
    import tensorflow as tf

    with tf.io.gfile.GFile(train_file, "rb") as f:
        lines = f.read().split(b"\n")
    header, rows = lines[0], [line for line in lines[1:] if line.strip()]
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(rows))
    n_dev = int(round(len(rows) * dev_percent / 100))
    dev, pool = np.sort(order[:n_dev]), np.sort(order[n_dev:])
    kept = set(rng.choice(len(pool), int(round(len(pool) * label_percent / 100)), replace=False).tolist())

    def hidden(row: bytes) -> bytes:
        cells = row.split(b"\t")
        cells[LABEL_CELL] = b""
        return b"\t".join(cells)

    pool_rows = [rows[j] if i in kept else hidden(rows[j]) for i, j in enumerate(pool)]
    os.makedirs(out_dir, exist_ok=True)
    files = {"dev": os.path.join(out_dir, "dev.tsv"), "pool": os.path.join(out_dir, "pool.tsv")}
    for name, chosen in (("dev", [rows[j] for j in dev]), ("pool", pool_rows)):
        with open(files[name], "wb") as f:
            f.write(b"\n".join([header, *chosen]) + b"\n")
    label = lambda row: row.split(b"\t")[LABEL_CELL].strip().decode()  # noqa: E731
    kept_labels = [label(rows[pool[i]]) for i in sorted(kept)]
    return dict(files=files, seed=seed, dev_percent=dev_percent, label_percent=label_percent, train_pairs=len(rows),
                dev_pairs=len(dev), dev_positives=sum(label(rows[j]) == "1" for j in dev), pool_pairs=len(pool),
                labelled=len(kept), labelled_positives=kept_labels.count("1"), unlabelled=len(pool) - len(kept))


# === Runs and scores ===

class TaskLadder(reproduce.Ladder):
    """The reproduction ladder's runs (reused when finished, resumed when interrupted) and scores.json, scored on
    the user's test pairs instead of STS."""

    module = "bench.your_task"
    curve_tags = CURVE_TAGS

    def finished(self, row: str, run: str) -> bool:
        entry = self.scores.get(row, {})
        return entry.get("run") == run and "test" in entry

    def use_split(self, record: Dict[str, Any]) -> None:
        """Records the split; a root whose runs trained on another split is refused (its models would be reused)."""
        keys = ("seed", "dev_percent", "label_percent", "train_pairs")
        before = self.scores.get("_split")
        if before and any(before.get(k) != record[k] for k in keys):
            was = ", ".join(f"{k}={before.get(k)}" for k in keys)
            raise UserError(f"{self.root} holds runs trained on another split ({was}); give another "
                            "--artifacts_dir, or the split flags it was made with.")
        self.scores["_split"] = record
        self._save("_split")

    def score_model(self, row: str, model: str, test, dev=None, extra: Dict[str, Any] = None) -> Dict[str, Any]:
        """Scores `model` on the test pairs (and on the dev pairs, given their evaluator) as test_sts.py --pairs
        does: the model resolved as `--model`, untruncated; cached in the scores entry `row`."""
        entry = self.scores.setdefault(row, {})
        if "test" in entry:
            return entry
        from common.evaluation.evaluators import BinaryPairsEvaluator
        from common.loading.resolve import resolve_model

        embedder = resolve_model(model, artifacts_dir=self.root)
        began = time.time()
        entry["test"] = BinaryPairsEvaluator(test, prefix="test")(embedder.embed_fn)
        entry["test_seconds"] = round(time.time() - began, 1)
        if dev is not None:
            began = time.time()
            entry["dev"] = dev(embedder.embed_fn)
            entry["dev_seconds"] = round(time.time() - began, 1)
        entry.update(extra or {})
        self._save(row)
        logging.info("%s: test AP %.4f, F1 %.4f, accuracy %.4f", row, entry["test"]["test_average_precision"],
                     entry["test"]["test_f1"], entry["test"]["test_accuracy"])
        return entry


@dataclasses.dataclass(frozen=True)
class Plan:
    """What the benchmark runs: the starts (label -> --model value) and their learning rates, the seeds and
    the budgets."""

    starts: Dict[str, str]
    lrs: Dict[str, float]
    seeds: Sequence[int]
    pause_steps: int
    pause_batch: int
    simcse_steps: int
    simcse_batch: int
    pause_eval_every: int
    simcse_eval_every: int
    max_seq_len: int
    simcse_pooling: str
    checkpoint_every: int = 50

    def steps(self, kind: str) -> int:
        return self.simcse_steps if kind == "simcse" else self.pause_steps

    def eval_every(self, kind: str) -> int:
        return self.simcse_eval_every if kind == "simcse" else self.pause_eval_every

    def run_name(self, label: str, kind: str, seed: int) -> str:
        """A run's folder: its budget and learning rate in the name, so a run of other settings is not reused."""
        return f"{label} {kind} {self.steps(kind)} steps lr {self.lrs[label]:g} seed {seed}"

    def settings(self, label: str, kind: str, seed: int, split: Dict[str, Any]) -> Dict[str, Any]:
        """The run's train.py settings (flag names)."""
        files = split["files"]
        run = dict(model=self.starts[label], train_data=(files["pool"],), max_seq_len=self.max_seq_len,
                   train_epochs=1, train_steps_per_epoch=self.steps(kind), train_lr=self.lrs[label], seed=seed,
                   eval_every=self.eval_every(kind), publish_best=True, dev_data=files["dev"], dev_columns=PAIR_COLUMNS,
                   log_every=5, checkpoint_every=self.checkpoint_every)
        if kind == "simcse":
            return dict(run, columns=TRAIN_COLUMNS[:2], batch_size=self.simcse_batch, pooling=self.simcse_pooling)
        pause = dict(run, columns=TRAIN_COLUMNS, labels=LABELS, batch_size=self.pause_batch)
        return dict(pause, **SUPERVISED) if kind == "supervised" else pause


def plan_from_flags() -> Plan:
    if len(FLAGS.train_lrs) != len(FLAGS.starts):
        raise UserError(f"--train_lrs: one learning rate per start ({len(FLAGS.starts)}: {', '.join(FLAGS.starts)}); "
                        f"got {len(FLAGS.train_lrs)}.")
    lrs = reproduce.learning_rates("train_lrs", FLAGS.train_lrs)
    unknown = sorted(set(FLAGS.rows) - set(KINDS))
    if unknown:
        raise UserError(f"--rows: expected some of {', '.join(KINDS)}; got {', '.join(unknown)}.")
    try:
        seeds = [int(s) for s in FLAGS.seeds]
    except ValueError:
        raise UserError(f"--seeds: expected integers separated by commas, got {','.join(FLAGS.seeds)}.") from None
    if not 0 < FLAGS.dev_percent < 100 or not 0 < FLAGS.label_percent <= 100:
        raise UserError(f"--dev_percent must be in (0, 100) and --label_percent in (0, 100]; got "
                        f"{FLAGS.dev_percent:g} and {FLAGS.label_percent:g}.")
    starts = {start_label(s): resolve_start(s, FLAGS.data_path) for s in FLAGS.starts}
    return Plan(starts=starts, lrs=dict(zip(starts, lrs)), seeds=seeds, pause_steps=FLAGS.pause_steps,
                pause_batch=FLAGS.pause_batch, simcse_steps=FLAGS.simcse_steps, simcse_batch=FLAGS.simcse_batch,
                pause_eval_every=FLAGS.pause_eval_every, simcse_eval_every=FLAGS.simcse_eval_every,
                max_seq_len=FLAGS.max_seq_len, simcse_pooling=FLAGS.simcse_pooling)


def row_name(label: str, kind: str, seed: Optional[int] = None) -> str:
    return f"{label} start" if kind == "start" else f"{label} {kind} seed {seed}"


def train_row(ladder: TaskLadder, plan: Plan, label: str, kind: str, seed: int, split: Dict[str, Any], test, dev,
              after_step=None) -> Dict[str, Any]:
    """Trains (or resumes, or reuses) one row's run and scores its published model on the test pairs."""
    row, run = row_name(label, kind, seed), plan.run_name(label, kind, seed)
    if ladder.finished(row, run):
        return ladder.scores[row]
    model = ladder.run(run, "simcse" if kind == "simcse" else "pause", plan.settings(label, kind, seed, split), dev,
                       row=row, after_step=after_step)
    with open(os.path.join(model, "config.json")) as f:
        record = json.load(f)
    metrics = record.get("metrics", {})
    extra = dict(selection=record.get("selection"), train_seconds_total=metrics.get("seconds"),
                 final_loss=metrics.get("loss"))
    return ladder.score_model(row, model, test, extra=extra)


def probe_rows(ladder: TaskLadder, plan: Plan, split: Dict[str, Any], steps: int) -> None:
    """Seconds per training step of each (start, kind) with rows not scored yet (seed 0, its settings, no
    evaluations: `Ladder.probe`), cached in scores.json's `_probes` for the page's estimate."""
    for label in plan.starts:
        for kind in TRAINED:
            if all(ladder.finished(row_name(label, kind, s), plan.run_name(label, kind, s)) for s in plan.seeds):
                continue
            settings = {k: v for k, v in plan.settings(label, kind, 0, split).items()
                        if k not in ("eval_every", "publish_best", "dev_data", "dev_columns")}
            batch = settings["batch_size"]
            ladder.probe(f"{label} {kind} batch {batch} len {plan.max_seq_len}",
                         "simcse" if kind == "simcse" else "pause", settings, steps)


def main(argv):
    plan = plan_from_flags()
    began = time.time()
    ladder = TaskLadder(FLAGS.artifacts_dir, FLAGS.data_path,
                        carry_from=os.path.join(FLAGS.results_dir, "results.json"))
    ladder.keep_time()
    train_file, test_file = (os.path.join(FLAGS.data_path, f) for f in (TRAIN_FILE, TEST_FILE))
    missing = {}
    lost = [f for f in (TRAIN_FILE, TEST_FILE) if not os.path.exists(os.path.join(FLAGS.data_path, f))]
    if lost:
        missing = {label: f"{' and '.join(lost)} not found under --data_path" for label in plan.starts}
    else:
        from common.data.tables import parse_columns
        from common.evaluation.evaluators import dev_evaluator
        from common.evaluation.sts import PAIR_SCORE_FIELDS, read_scored_pairs

        split = write_split(train_file, os.path.join(FLAGS.artifacts_dir, "data"), FLAGS.split_seed,
                            FLAGS.dev_percent, FLAGS.label_percent)
        ladder.use_split(split)
        columns = parse_columns(PAIR_COLUMNS, PAIR_SCORE_FIELDS)
        test = read_scored_pairs(test_file, columns)
        # What train.py builds from --dev_data=<dev.tsv> --dev_columns=...: 0/1 labels, so binary pairs.
        dev = dev_evaluator(FLAGS.data_path, split["files"]["dev"], "auto", columns)
        for label, spec in plan.starts.items():
            if "/" in spec and not os.path.isdir(spec):
                missing[label] = f"start {spec} not found"
        present = [label for label in plan.starts if label not in missing]
        if "start" in FLAGS.rows:
            for label in present:
                ladder.score_model(row_name(label, "start"), plan.starts[label], test, dev,
                                   extra=dict(model=label))
        # Seed by seed, so that a benchmark stopped early has every row at the same number of seeds.
        for seed in plan.seeds:
            for label in present:
                for kind in TRAINED:
                    if kind in FLAGS.rows:
                        train_row(ladder, plan, label, kind, seed, split, test, dev)
        if FLAGS.probe_steps:
            probe_rows(ladder, plan, split, FLAGS.probe_steps)
    text = write_results(ladder.scores, plan, FLAGS.results_dir, pages.command("bench.your_task"), missing)
    print(text)
    print(f"wall time this invocation: {time.time() - began:.0f} s")


# === The page ===

def _values(scores: Dict[str, Any], label: str, kind: str, seeds: Sequence[int], key: str) -> List[float]:
    rows = [row_name(label, kind)] if kind == "start" else [row_name(label, kind, s) for s in seeds]
    return [100 * scores[r]["test"][key] for r in rows if "test" in scores.get(r, {})]


def verdict_row(scores, label: str, kind: str, seeds, key: str = METRICS[0][0]) -> Optional[verdicts.Row]:
    values = _values(scores, label, kind, seeds, key)
    return verdicts.Row(TITLES[kind], values, fixed=kind == "start") if values else None


def collapsed_seeds(scores: Dict[str, Any], label: str, seeds, batch: int) -> List[str]:
    """Rule 6 (`bench.verdicts.collapsed`) over a start's SimCSE runs: one line per collapsed seed."""
    out = []
    for seed in seeds:
        entry = scores.get(row_name(label, "simcse", seed), {})
        found = verdicts.collapsed(entry.get("final_loss"), batch)
        if found:
            out.append(f"seed {seed}: {found}")
    return out


CLAIMS = (("PAUSE above supervised-only", "pause", "supervised"), ("PAUSE above the start", "pause", "start"),
          ("SimCSE above the start", "simcse", "start"))


def _brief(claim: str, a: Optional[verdicts.Row], b: Optional[verdicts.Row]) -> str:
    """A secondary metric's outcome by the same rule, with its difference of means."""
    v = verdicts.above(claim, a, b)
    return v.outcome if a is None or b is None else f"{v.outcome} ({a.mean - b.mean:+.2f})"


def claims(scores: Dict[str, Any], plan: Plan) -> List[verdicts.Verdict]:
    """Each claim per start, judged on test AP; the detail adds F1's and accuracy's outcomes by the same rule."""
    found = []
    for label in plan.starts:
        for claim, a, b in CLAIMS:
            name = f"{label}: {claim}"
            primary = verdicts.above(name, verdict_row(scores, label, a, plan.seeds),
                                     verdict_row(scores, label, b, plan.seeds))
            outcome, detail = primary.outcome, f"test AP x100: {primary.detail}"
            if outcome == verdicts.NOT_RUN:
                found.append(verdicts.Verdict(name, outcome, detail))
                continue
            detail += "; by the same rule, " + ", ".join(
                f"{title} " + _brief(name, verdict_row(scores, label, a, plan.seeds, key),
                                     verdict_row(scores, label, b, plan.seeds, key)) for key, title in METRICS[1:])
            if a == "simcse":
                collapsed = collapsed_seeds(scores, label, plan.seeds, plan.simcse_batch)
                if collapsed:
                    outcome, detail = verdicts.NOT_TESTABLE, detail + "; a run collapsed: " + "; ".join(collapsed)
            found.append(verdicts.Verdict(name, outcome, detail))
    return found


PLAIN = {"PAUSE above supervised-only": "adding the unlabelled pool to the kept labels (PAUSE rather than "
                                        "supervised-only)",
         "PAUSE above the start": "training PAUSE on the kept labels and the pool",
         "SimCSE above the start": "unsupervised SimCSE on the pool's sentences"}


def plain_lines(found: List[verdicts.Verdict], plan: Plan) -> List[str]:
    """What helps a user here and what does not, per start, in words."""
    groups = (("helps", verdicts.HELD), ("does not help (below)", verdicts.NOT_HELD),
              ("cannot be told from seed noise", verdicts.NOT_TESTABLE), ("too few seeds yet to tell", "seeds"),
              ("not run yet", verdicts.NOT_RUN))
    lines = []
    for label in plan.starts:
        said: Dict[str, List[str]] = {}
        for v in found:
            if v.claim.startswith(f"{label}: "):
                # NOT TESTABLE for want of seeds is not a finding about noise: said apart.
                group = "seeds" if v.outcome == verdicts.NOT_TESTABLE and "fewer than" in v.detail else v.outcome
                said.setdefault(group, []).append(PLAIN[v.claim.split(": ", 1)[1]])
        parts = [f"{what}: {'; '.join(said[group])}" for what, group in groups if said.get(group)]
        lines.append(f"- From {label}: " + ". ".join(p[0].upper() + p[1:] for p in parts) + ".")
    return lines


def _mean_sd(values: List[float], fixed: bool = False) -> str:
    if not values:
        return "-"
    if fixed or len(values) == 1:
        return f"{values[0]:.2f}"
    return f"{np.mean(values):.2f} ± {np.std(values, ddof=1):.2f}"


def table(scores: Dict[str, Any], plan: Plan, missing: Dict[str, str]) -> List[str]:
    """The results table: test AP, F1 and accuracy (x100, mean ± sd over seeds), the dev AP of the published
    step and the seconds of each run; a row without scores says NOT RUN and why."""
    lines = ["| start | row | seeds | test AP | test F1 | test accuracy | dev AP (published step) | "
             "published steps | s per run |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for label in plan.starts:
        for kind in KINDS:
            rows = [row_name(label, kind)] if kind == "start" else [row_name(label, kind, s) for s in plan.seeds]
            entries = [scores[r] for r in rows if "test" in scores.get(r, {})]
            if not entries:
                why = missing.get(label, "no score yet")
                lines.append(f"| {label} | {TITLES[kind]} | - | NOT RUN ({why}) | | | | | |")
                continue
            fixed = kind == "start"
            cells = [_mean_sd(_values(scores, label, kind, plan.seeds, key), fixed) for key, _ in METRICS]
            if fixed:
                dev = [100 * e["dev"]["dev_average_precision"] for e in entries if "dev" in e]
                steps, seconds = "untrained", [start_seconds(e) for e in entries]
            else:
                dev = [100 * e["selection"]["score"] for e in entries if (e.get("selection") or {}).get("score")
                       is not None]
                steps = ", ".join(str((e.get("selection") or {}).get("step")) for e in entries)
                seconds = [run_seconds(e) for e in entries]
            seeds = "fixed" if fixed else str(len(entries))
            lines.append(f"| {label} | {TITLES[kind]} | {seeds} | {' | '.join(cells)} | {_mean_sd(dev, fixed)} | "
                         f"{steps} | {np.mean(seconds):.0f} |")
    return lines


def run_seconds(entry: Dict[str, Any]) -> float:
    """A trained row's seconds: training with its dev evaluations (every piece of a resumed run) and its test
    scoring."""
    train = entry.get("train_seconds_total") or entry.get("train_seconds") or 0.0
    return float(train) + float(entry.get("test_seconds", 0.0))


def start_seconds(entry: Dict[str, Any]) -> float:
    """The start's seconds: its test and dev scoring."""
    return float(entry.get("test_seconds", 0.0)) + float(entry.get("dev_seconds", 0.0))


def estimate(scores: Dict[str, Any], plan: Plan, label: str, kind: str) -> Optional[float]:
    """Seconds one row of (start, kind) takes here: the mean of its finished runs, else its probe's seconds per
    step x steps plus its dev evaluations and test scoring at the start's measured cost; None without either."""
    done = [run_seconds(scores[row_name(label, kind, s)]) for s in plan.seeds
            if "test" in scores.get(row_name(label, kind, s), {})]
    if done:
        return float(np.mean(done))
    batch = plan.simcse_batch if kind == "simcse" else plan.pause_batch
    probe = scores.get("_probes", {}).get(f"{label} {kind} batch {batch} len {plan.max_seq_len}")
    if not probe:
        return None
    start = scores.get(row_name(label, "start"), {})
    steps = plan.steps(kind)
    every = plan.eval_every(kind)
    evals = steps // every + (steps % every > 0)
    return (steps * sum(probe["seconds_per_step"].values()) + evals * start.get("dev_seconds", 0.0)
            + start.get("test_seconds", 0.0))


def time_lines(scores: Dict[str, Any], plan: Plan) -> List[str]:
    """Measured seconds per row kind, the rows still to run with their estimate, and the benchmark's busy time."""
    lines = ["## Time", "", "Seconds per run on this machine: training with its dev evaluations, and the test "
             "scoring (the start: its test scoring). Rows not run yet are estimated from the finished runs of the "
             "same start and row, else from a timed probe (`--probe_steps`: seconds per step of the row's "
             "settings, seed 0) with the start's dev and test scoring times.", "",
             "| start | row | runs done | s per run (measured or estimated) | runs to go | s to go |",
             "| --- | --- | --- | --- | --- | --- |"]
    done_total, to_go = 0.0, 0.0
    unknown = []
    for label in plan.starts:
        for kind in KINDS:
            rows = [row_name(label, kind)] if kind == "start" else [row_name(label, kind, s) for s in plan.seeds]
            done = [scores[r] for r in rows if "test" in scores.get(r, {})]
            seconds = [start_seconds(e) if kind == "start" else run_seconds(e) for e in done]
            done_total += sum(seconds)
            left = len(rows) - len(done)
            per = float(np.mean(seconds)) if seconds else (None if kind == "start" else estimate(scores, plan, label,
                                                                                               kind))
            if left and per is None:
                unknown.append(f"{label} {kind}")
            to_go += left * (per or 0.0)
            lines.append(f"| {label} | {TITLES[kind]} | {len(done)} | "
                         f"{'-' if per is None else f'{per:.0f}' + ('' if seconds else ' (estimated)')} | {left} | "
                         f"{'-' if per is None or not left else f'{left * per:.0f}'} |")
    lines += ["", f"Measured so far: {done_total:.0f} s ({done_total / 3600:.1f} h). Still to run: about "
              f"{to_go:.0f} s ({to_go / 3600:.1f} h)" + (f", without {', '.join(unknown)} (no estimate yet)"
                                                          if unknown else "")
              + f"; the whole benchmark about {(done_total + to_go) / 3600:.1f} h of this machine."]
    meta = scores.get("_meta", {})
    invocations = meta.get("invocations", {})
    busy = busy_seconds(invocations)
    if busy:
        lines.append(f"Busy time: {busy:.0f} s over {len(invocations)} invocation(s); highest 1-minute load average "
                     f"seen at a save: {max(i['max_load1'] for i in invocations.values()):.2f}"
                     + reproduce.other_cores_clause(invocations.values()) + ".")
        commands = sorted((i["start"], i.get("command", "(not recorded)")) for i in invocations.values())
        lines += ["", "Invocations (a later one reuses what an earlier one finished):", ""]
        lines += [f"- {time.strftime('%Y-%m-%d %H:%M', time.gmtime(start))} UTC: `{command}`"
                  for start, command in commands]
    return lines + [""]


def curve_lines(scores: Dict[str, Any], plan: Plan) -> List[str]:
    """Per trained row with curves: dev AP at the first evaluation, at the best one and at the last (mean over
    seeds), and the best steps: whether the budget reached the peak."""
    lines = ["| start | row | seeds | dev AP, first evaluation | best | last | best steps |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for label in plan.starts:
        for kind in TRAINED:
            curves = [scores[row_name(label, kind, s)]["curves"]["dev_ap"] for s in plan.seeds
                      if (scores.get(row_name(label, kind, s), {}).get("curves") or {}).get("dev_ap")]
            if not curves:
                continue
            first = [100 * c[0][1] for c in curves]
            best = [100 * max(v for _, v in c) for c in curves]
            last = [100 * c[-1][1] for c in curves]
            steps = [str(max(c, key=lambda p: p[1])[0]) for c in curves]
            lines.append(f"| {label} | {TITLES[kind]} | {len(curves)} | {_mean_sd(first)} | {_mean_sd(best)} | "
                         f"{_mean_sd(last)} | {', '.join(steps)} |")
    return lines if len(lines) > 2 else []


def plot_curves(scores: Dict[str, Any], plan: Plan, out_dir: str) -> Optional[str]:
    """dev_curves.png: dev AP over training per start (each seed thin, the seeds' mean thick), the start's dev AP
    dashed; None without curves."""
    from common.figures import new_figure, write_png

    labels = [label for label in plan.starts if any(
        (scores.get(row_name(label, k, s), {}).get("curves") or {}).get("dev_ap") for k in TRAINED
        for s in plan.seeds)]
    if not labels:
        return None
    fig = new_figure((5 * len(labels), 3.6), dpi=100)
    axes = fig.subplots(1, len(labels), squeeze=False)[0]
    for ax, label in zip(axes, labels):
        for i, kind in enumerate(TRAINED):
            curves = [scores[row_name(label, kind, s)]["curves"]["dev_ap"] for s in plan.seeds
                      if (scores.get(row_name(label, kind, s), {}).get("curves") or {}).get("dev_ap")]
            if not curves:
                continue
            for c in curves:
                ax.plot([p[0] for p in c], [100 * p[1] for p in c], color=f"C{i}", alpha=0.3, linewidth=0.8)
            n = min(len(c) for c in curves)
            ax.plot([p[0] for p in curves[0][:n]], np.mean([[100 * p[1] for p in c[:n]] for c in curves], axis=0),
                    color=f"C{i}", marker=".", label=f"{TITLES[kind]} ({len(curves)} seeds)")
        start = scores.get(row_name(label, "start"), {}).get("dev")
        if start:
            ax.axhline(100 * start["dev_average_precision"], color="gray", linestyle="--", label=TITLES["start"])
        ax.set_title(f"dev AP x100 over training, from {label}", fontsize=9)
        ax.set_xlabel("step", fontsize=8)
        ax.legend(fontsize=6)
    fig.tight_layout()
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "dev_curves.png")
    write_png(fig, path)
    return path


PROBE_PAGE = os.path.join("probe", "README.md")  # beside the page: the run its budgets were chosen from
NEAR_BEST = 0.5  # dev AP points: where a probe's curve has reached its plateau


def probe_lines(results_dir: str, plan: Plan) -> List[str]:
    """Where the budgets come from: the probe page's settings and the steps at which its dev AP peaked."""
    record = os.path.join(results_dir, os.path.dirname(PROBE_PAGE), "results.json")
    if not os.path.exists(record):
        return []
    with open(record) as f:
        probe = json.load(f)
    run, scores = probe["plan"], probe["scores"]
    peaks = []
    for kind in TRAINED:
        curves = [e["curves"]["dev_ap"] for name, e in sorted(scores.items())
                  if name.startswith(tuple(f"{label} {kind} seed " for label in run["starts"]))
                  and (e.get("curves") or {}).get("dev_ap")]
        if not curves:
            continue
        # The best step, and the first step whose dev AP came within NEAR_BEST points of the best.
        found = []
        for curve in curves:
            best = max(curve, key=lambda p: p[1])
            near = next(step for step, value in curve if 100 * value >= 100 * best[1] - NEAR_BEST)
            found.append(f"step {best[0]} ({100 * best[1]:.2f}; within {NEAR_BEST:g} of it from step {near})")
        peaks.append(f"{TITLES[kind].split(' (')[0]} at {', '.join(found)} of "
                     f"{run['simcse_steps' if kind == 'simcse' else 'pause_steps']}")
    if not peaks:
        return []
    return ["", f"The budgets were chosen from the dev curves of [a probe]({PROBE_PAGE}) (from "
            f"{', '.join(run['starts'])}, seed{'s' if len(run['seeds']) > 1 else ''} "
            f"{', '.join(str(s) for s in run['seeds'])}, dev AP every {run['pause_eval_every']} (PAUSE, "
            f"supervised-only) or {run['simcse_eval_every']} (SimCSE) steps): its best dev AP came for "
            f"{'; '.join(peaks)}. Here PAUSE and supervised-only train {plan.pause_steps} steps and score the dev "
            f"set every {plan.pause_eval_every}; SimCSE {plan.simcse_steps} steps, every {plan.simcse_eval_every}."]


def setting_lines(scores: Dict[str, Any], plan: Plan) -> List[str]:
    split = scores.get("_split")
    lines = []
    if split:
        lines.append(
            f"The task: MRPC train ({split['train_pairs']:,} pairs) split by seed {split['seed']}: "
            f"{split['dev_pairs']:,} pairs ({split['dev_percent']:g} %, {split['dev_positives']:,} paraphrases) held "
            f"out as the user's dev set; of the other {split['pool_pairs']:,} (the pool), {split['labelled']:,} "
            f"({split['label_percent']:g} %, {split['labelled_positives']:,} paraphrases) keep their label and "
            f"{split['unlabelled']:,} are unlabelled (an empty label cell). Test: MRPC test as it ships.")
    lines += [
        "", "Every trained row reads the pool file with `--columns` (and `--labels=0,1`) as a user's run does, "
        "scores the dev set every few steps (`--dev_data`, dev average precision) and publishes its best step "
        f"(`--publish_best`). PAUSE and supervised-only: {plan.pause_steps} steps of {plan.pause_batch} pairs, dev "
        f"AP every {plan.pause_eval_every} (PAUSE's batches mix labelled and unlabelled pairs by the class priors "
        "estimated from the kept labels; supervised-only's are all labelled, with no PU term). SimCSE unsup: "
        f"{plan.simcse_steps} steps of {plan.simcse_batch} pool sentences, dev AP every {plan.simcse_eval_every}, "
        f"`--pooling={plan.simcse_pooling}`. Training length {plan.max_seq_len} tokens; peak learning rates "
        + ", ".join(f"{label} {lr:g}" for label, lr in plan.lrs.items())
        + ". Every model is scored untruncated on MRPC test, as `test_sts.py --pairs` scores 0/1 pairs: average "
        "precision (AP) of the cosine similarity, F1 and accuracy at their best cosine thresholds (x100).", "",
        "The user's dev set holds more labels than the pool keeps (it is a tenth of train): a user who can label "
        "that many pairs might train on them as well; this page does not test that."]
    return lines


def portable(entry: Dict[str, Any]) -> Dict[str, Any]:
    """A scores entry for results.json: no paths of this machine (the split's files, a run's data files are named
    by their file name) and no full training metrics."""
    out = {k: v for k, v in entry.items() if k not in ("metrics", "files")}
    if isinstance(out.get("settings"), dict):
        out["settings"] = {k: ([os.path.basename(p) for p in v] if k == "train_data" else
                               os.path.basename(v) if k == "dev_data" else v) for k, v in out["settings"].items()}
    return out


def write_results(scores: Dict[str, Any], plan: Plan, results_dir: str, command: str,
                  missing: Dict[str, str]) -> str:
    """The page (`results_dir`/README.md), its figure and results.json; returns the page's text."""
    found = claims(scores, plan)
    split = scores.get("_split") or {}
    labels = f"{split['label_percent']:g} % of the labels" if split else "few labels"
    lines = pages.header(f"Your task: MRPC paraphrases with {labels}", "bench.your_task", command,
                         results_dir=results_dir)
    lines += [*setting_lines(scores, plan), *probe_lines(results_dir, plan), "", "## Results", "",
              *table(scores, plan, missing), "", "## What helps here", "", *plain_lines(found, plan), "",
              verdicts.RULES + " Here every claim is judged on test AP.", "", *[v.line() for v in found], ""]
    curves = curve_lines(scores, plan)
    if curves:
        lines += ["## Over training", "", "Dev AP x100 at the first evaluation, at the best one (the published "
                  "step) and at the last, mean ± sd over seeds: a best step well before the last says the budget "
                  "reached the peak.", "", *curves, ""]
    figure = plot_curves(scores, plan, results_dir)
    if figure:
        lines += [f"![{os.path.basename(figure)}]({os.path.basename(figure)})", ""]
    lines += time_lines(scores, plan)
    compact = {k: portable(v) if isinstance(v, dict) else v for k, v in scores.items()}
    data = {"claims": [dict(claim=v.claim, outcome=v.outcome, detail=v.detail) for v in found],
            "plan": {**dataclasses.asdict(plan), "starts": {k: start_label(v) for k, v in plan.starts.items()}},
            "scores": compact}
    return pages.write(results_dir, lines, data)


if __name__ == "__main__":
    define_flags()
    cli.run(main)
