"""Training parity: each method trained by the toolkit and by a reference trainer, from one start.

    git clone https://github.com/EQTPartners/pause ../pause      # once, for the pause row
    .venv/bin/python -m bench.parity --data_path=../shared/data --pause_code=../pause \\
        --rows=simcse_unsup,simcse_sup,trans_encoder,pause --seeds=0,1,2 --steps=500
    .venv/bin/python -m bench.parity --data_path=../shared/data --rows=simcse_unsup --seeds=0 --steps=5 \\
        --dropout=0      # a diagnostic: both trainers deterministic, their models equal to rounding

Each row trains the toolkit side in this process, through `common.training.registry.build_config`
and `common.training.runs.train` as train.py does, and the reference side in the reference
environment (`make reference-env`: PyTorch, sentence-transformers, transformers), in a subprocess
running `bench/parity_worker.py`, which imports nothing of this project. Both sides start from the
same Hugging Face BERT folder (`--start`), see the same training examples in the same order (this
module draws them with the toolkit's own sampler, `StreamSampler` with the run's seed, checks them
against the fingerprint the toolkit's run records, and hands them to the worker in a JSON job), and
train with the same batch size, steps, learning rate, schedule (linear decay to 0 after the
configured warm-up), weight decay, gradient clip, max length and pooling. Each side's final model
is then scored by the same evaluator: `common.evaluation.sts` on the toolkit's encoder built from
that side's saved weights (the STS average of the seven headline sets and STS-B dev, Spearman
x100), at `--score_max_seq_len` tokens.

Rows (`--rows`):
- simcse_unsup: `--method=simcse --simcse_mode=unsup --pooling=mean` against sentence-transformers'
  `MultipleNegativesRankingLoss(scale = 1 / temperature)` over (s, s) pairs, dropout on. SimCSE's
  MLP (`--pooling=cls_mlp`) has no sentence-transformers counterpart, so both sides pool by the
  masked mean without it.
- simcse_sup: `--simcse_mode=sup --pooling=mean` on (premise, entailment, contradiction) triples of
  `--sup_train_data` against MNRL with the contradiction as the hard negative.
- trans_encoder: one cycle of `--method=trans_encoder` on the first `--te_pairs` STS-B train pairs;
  the cross-encoder phase (on the start bi-encoder's cosines, computed once by the toolkit) against
  sentence-transformers' `CrossEncoder` (`BCEWithLogitsLoss`, one label), and the bi-encoder phase
  (on the toolkit cross-encoder's scores of the same seed) against `CosineSimilarityLoss`. The
  cross-encoders are scored through the toolkit's cross-encoder SavedModel (`test_sts.py
  --mode=cross`), the reference one after loading its weights into the toolkit's CrossEncoderModel.
- pause: no PyTorch trainer exists; the official TensorFlow code (`--pause_code`, a checkout of
  EQTPartners/pause) is run under this TensorFlow with tf-keras. End to end
  (`bench/pause_official_train.py`): its own `train_nli.run()` from the start exported by
  `export.py --format=tfhub-bert`, on GZIP TFRecords in its feature layout written from the toolkit
  run's labelled split (`--pause_labels` percent kept), `--pause_epochs` x `--pause_steps_per_epoch`
  steps of `--batch_size` at `--pause_max_seq_len`, against `train.py --method=pause` with the flags
  that train as the original does (`PAUSE_ORIGINAL_FLAGS`: row `pause`) and with the toolkit's
  defaults (row `pause_defaults`); every final embedder scored by the same STS evaluator (the
  official one through its `EmbedModel` SavedModel). And one step's loss and head gradients against
  the toolkit's on a tiny fixture (`bench/pause_official.py`).
PAUSE's and DeCLUTR's loss formulas are also checked against NumPy in the test suite; the page
lists those tests.

The SimCSE rows also evaluate STS-B dev `--curve_points` times during training on both sides:
the toolkit's run with `--eval_every` and `StsbDevEvaluator`, as train.py evaluates, and the
reference's snapshots (the worker saves the model every as many steps) scored afterwards by the
same `StsbDevEvaluator` on the toolkit's encoder of each snapshot, at the start's own maximum
length as the in-training evaluation embeds. The page gives both curves step by step with the verdict of `RULE`
at each step, and draws them (`curves.png`).

Every row runs for each of `--seeds` on both sides, alternating toolkit and reference per seed; the
wall time of each side is measured, with the CPU other processes used meanwhile (a timing is LOADED
above `--max_load` cores). The verdict rule (`RULE`) is stated on the page. Artifacts go to
`--work_dir/<start>/<row>-<settings digest>/seed<k>/<side>/`: a finished side is reused, an
interrupted toolkit run resumed, so a killed benchmark continues where it stopped. The dated page
and results.json go to `--results_dir`; the rows of the page already there that an invocation
does not run are carried over, each with the header of the run that measured it.
`SIDE_DIFFERENCES` (on the page) is what still differs between the sides by construction. Not part
of the test suite.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import math
import os
import shutil
import subprocess
import sys
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

from absl import flags, logging

from common import cli

from bench import harness
from common.errors import UserError

FLAGS = flags.FLAGS
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROWS = ("simcse_unsup", "simcse_sup", "trans_encoder", "pause")
DEFAULT_START = "starts/bert_mini_books"  # under --data_path
TOOLKIT, REFERENCE = "toolkit", "reference"
SIDES = (TOOLKIT, REFERENCE)
EQUAL, DIFFERENT, UNDECIDED = "EQUAL", "DIFFERENT", "NOT DECIDED"
MIN_SEEDS = 2
METRICS = (("sts_avg", "STS avg"), ("stsb_dev", "STS-B dev"))
# Keras' Adam epsilon (the toolkit's optimizer); torch's default is 1e-8, so the reference gets this one.
ADAM_EPSILON = 1e-7
# sentence-transformers 6's CrossEncoder.smart_batching_collate asserts batch size <= max_length
# (it compares input_ids.shape[0], the batch dimension, with the max length).
TE_CROSS_MAX_SEQ_LEN = 64

RULE = (f"Verdict rule, per metric: d = mean(toolkit) - mean(reference) over the seeds; the seed noise is the "
        f"larger of the two sides' seed standard deviations (sample sd, n - 1). EQUAL when |d| <= noise, "
        f"DIFFERENT (with d and the noise) when |d| > noise, {UNDECIDED} when a side has fewer than {MIN_SEEDS} "
        f"seeds. The standard error of d, se = sqrt(sd_t²/n_t + sd_r²/n_r), is shown beside it: d within "
        f"the spread of single runs is what a user switching trainers would see.")

# The configuration and tokenizer files of a Hugging Face BERT folder.
HF_FOLDER_FILES = ("config.json", "vocab.txt", "tokenizer_config.json", "tokenizer.json", "special_tokens_map.json")
# What differs between the two sides whatever the settings (the page lists it).
SIDE_DIFFERENCES = (
    f"Adam's epsilon: Keras adds it to sqrt(v) before the bias correction, PyTorch after, so Keras' is in effect "
    f"epsilon / sqrt(1 - 0.999^t) in PyTorch's terms (31x at step 1, 1.3x at step 1,000); the reference gets "
    f"Keras' default {ADAM_EPSILON:g} (PyTorch's default is 1e-8). A `--dropout=0` run, where both trainers are "
    "deterministic, shows how far this alone takes the two apart.",
    "Dropout masks come from each framework's own generator: the same rate, not the same masks. (Fresh weights do "
    "not differ: the Trans-Encoder cross-encoder's pooler and classifier, which a masked-LM start lacks, are the "
    "toolkit's initial ones on both sides.)",
    "Tokenization is each side's own (the toolkit's in-graph WordPiece, Hugging Face `tokenizers`); they give the "
    "same ids (the toolkit's tokenizer is tested token for token against Hugging Face's: "
    "docs/design/tokenization.md).",
    "The reference saves the Hugging Face model under its SentenceTransformer or CrossEncoder with a `vocab.txt` "
    "(transformers 5 writes `tokenizer.json` only), which the toolkit loads with the row's pooling.",
)

# The tests that check the loss formulas of the methods without a PyTorch trainer against a NumPy
# reference written from the papers' formulas (or, for DeCLUTR's span sampler, the official sampler's statistics).
FORMULA_TESTS = {
    "pause": (
        ("tests/pause_tf/test_losses.py::test_nnpu_and_ce_match_numpy",
         "nnPU (one-vs-rest, sigmoid loss, non-negative correction) and the labelled cross-entropy against NumPy, "
         "3 and 5 classes, mixed, all-unlabelled and all-labelled batches"),
        ("tests/pause_tf/test_losses.py::test_negative_risk_branch_is_taken_and_matches",
         "the non-negative branch (negative risk below 0) taken and equal to NumPy"),
        ("tests/pause_tf/test_losses.py::test_pause_loss_combines_terms_and_has_gradients",
         "cross-entropy + pu_weight x nnPU, finite gradients"),
        ("tests/pause_tf/test_schedules.py::test_per_epoch_annealing_reproduces_the_original_restart",
         "the official per-epoch PU-weight annealing reproduced"),
    ),
    "declutr": (
        ("tests/common/training/test_contrastive.py::test_nt_xent_matches_numpy",
         "DeCLUTR's eq. 2 (NT-Xent over 2N views, both directions) against NumPy"),
        ("tests/common/training/test_contrastive.py::test_correct_pairing_scores_lower_than_shuffled",
         "the right pairing scores lower than a shuffled one"),
        ("tests/declutr_tf/test_span_sampling.py::test_placement_matches_the_official_sampler_on_a_4096_token_document",
         "span placement statistics equal to the official sampler's on a 4,096-token document"),
    ),
}


def define_flags() -> None:
    """The benchmark's flags, defined when it runs, not at import (see bench/harness.py)."""
    flags.DEFINE_string("data_path", "data", "Data root (downstream/, starts/).")
    flags.DEFINE_string("start", "", f"The start of both sides: a Hugging Face BERT folder, or minilm; empty: "
                        f"<data_path>/{DEFAULT_START} (the masked-LM-pretrained BERT-mini).")
    flags.DEFINE_list("rows", list(ROWS), f"Rows to run: {', '.join(ROWS)}.")
    flags.DEFINE_list("seeds", ["0", "1", "2"], f"Seeds of every row, on both sides (the verdict needs {MIN_SEEDS}).")
    flags.DEFINE_integer("steps", 500, "Optimizer steps of each training (each Trans-Encoder phase).", lower_bound=1)
    flags.DEFINE_integer("batch_size", 64, "Batch size of every row (sentences, triples or pairs per step).",
                         lower_bound=2)
    flags.DEFINE_float("lr", None, "Peak learning rate of every row; default: each method's own (SimCSE unsup "
                       "3e-5, sup 5e-5; Trans-Encoder cross 2e-5, bi 5e-5).")
    flags.DEFINE_integer("max_seq_len", 32, "Training max length of the bi-encoder rows (the Trans-Encoder "
                         f"cross-encoder trains at its default {TE_CROSS_MAX_SEQ_LEN}).", lower_bound=8)
    flags.DEFINE_float("dropout", None, "Dropout rate of both sides (toolkit --dropout; the reference's "
                       "hidden_dropout_prob and attention_probs_dropout_prob); default: the start's own. With 0 both "
                       "trainers are deterministic, so their models should agree to rounding: a diagnostic.",
                       lower_bound=0.0)
    flags.DEFINE_list("unsup_train_data", ["senteval:dev", "senteval:test"],
                      "Sentences of simcse_unsup (any --train_data of unsup SimCSE).")
    flags.DEFINE_list("sup_train_data", ["senteval:dev", "senteval:test"],
                      "NLI triples of simcse_sup (any --train_data of sup SimCSE).")
    flags.DEFINE_integer("curve_points", 10, "STS-B dev evaluations during each SimCSE training, on both sides "
                         "(every --steps / N steps; the toolkit's in-training evaluator, and the same evaluator on the "
                         "reference's snapshots): the page's curves; 0: none.", lower_bound=0)
    flags.DEFINE_integer("te_pairs", 0, "STS-B train pairs of the trans_encoder row; 0 takes all.", lower_bound=0)
    flags.DEFINE_integer("score_max_seq_len", 512, "Tokens every model is scored at (both sides alike).",
                         lower_bound=8)
    flags.DEFINE_string("reference_python", ".venv-ref/bin/python",
                        "Python of the reference environment (`make reference-env`).")
    flags.DEFINE_string("pause_code", "", "pause row: a checkout of the official PAUSE code "
                        "(git clone https://github.com/EQTPartners/pause); empty: the row says it was not given.")
    flags.DEFINE_integer("pause_epochs", 4, "pause row: epochs of both trainers (the official default, 4).",
                         lower_bound=1)
    flags.DEFINE_integer("pause_steps_per_epoch", 125, "pause row: steps per epoch of both trainers (official "
                         "--train_steps_per_epoch; batches of --batch_size).", lower_bound=1)
    flags.DEFINE_integer("pause_max_seq_len", 64, "pause row: --max_seq_len of both trainers (the official pads "
                         "every sentence to it).", lower_bound=8)
    flags.DEFINE_float("pause_labels", 5.0, "pause row: percent of the pairs that keep their label "
                       "(--pos_sample_prec).")
    flags.DEFINE_integer("threads", 0, "Threads of both sides (TensorFlow intra/inter-op, torch); 0: the CPU count.",
                         lower_bound=0)
    flags.DEFINE_string("work_dir", "artifacts/parity",
                        "Where the runs are kept (resumable; a finished side is reused).")
    flags.DEFINE_string("results_dir", "docs/benchmarks/parity", "Where the results page (README.md) and "
                        "results.json are written.")
    flags.DEFINE_float("max_load", 0.5, "Refuse to start when the 1-minute load average exceeds this; a timing "
                       "during which other processes used more cores than this is marked LOADED.")
    flags.DEFINE_bool("allow_loaded", False, "Run on a loaded machine anyway; its timings are marked LOADED.")


# === The verdict ===

@dataclasses.dataclass(frozen=True)
class Comparison:
    """One metric of one row: both sides over their seeds, and the verdict of `RULE`."""

    toolkit: Tuple[float, ...]
    reference: Tuple[float, ...]

    @staticmethod
    def _mean(values: Sequence[float]) -> float:
        return sum(values) / len(values)

    @classmethod
    def _sd(cls, values: Sequence[float]) -> float:
        if len(values) < 2:
            return 0.0
        m = cls._mean(values)
        return math.sqrt(sum((v - m) ** 2 for v in values) / (len(values) - 1))

    @property
    def difference(self) -> float:
        return self._mean(self.toolkit) - self._mean(self.reference)

    @property
    def noise(self) -> float:
        return max(self._sd(self.toolkit), self._sd(self.reference))

    @property
    def se(self) -> float:
        return math.sqrt(self._sd(self.toolkit) ** 2 / len(self.toolkit)
                         + self._sd(self.reference) ** 2 / len(self.reference))

    @property
    def outcome(self) -> str:
        if min(len(self.toolkit), len(self.reference)) < MIN_SEEDS:
            return UNDECIDED
        return EQUAL if abs(self.difference) <= self.noise else DIFFERENT

    def side(self, name: str) -> str:
        values = self.toolkit if name == TOOLKIT else self.reference
        if len(values) == 1:
            return f"{values[0]:.2f}"
        return f"{self._mean(values):.2f} ± {self._sd(values):.2f}"

    def verdict(self) -> str:
        if self.outcome == DIFFERENT:
            return f"**{DIFFERENT}** by {self.difference:+.2f} (noise {self.noise:.2f})"
        return f"**{self.outcome}**"


def compare(scores: Dict[str, Dict[str, Dict[str, Any]]], metric: str) -> Optional[Comparison]:
    """The Comparison of `metric` over a row's seeds ({seed: {side: {metric: value}}}); None before
    both sides have a score."""
    toolkit = tuple(s[TOOLKIT][metric] for s in scores.values() if metric in s.get(TOOLKIT, {}))
    reference = tuple(s[REFERENCE][metric] for s in scores.values() if metric in s.get(REFERENCE, {}))
    return Comparison(toolkit, reference) if toolkit and reference else None


# === The results page ===

def _seconds(values: Sequence[Dict[str, Any]], key: str = "seconds") -> str:
    found = [v[key] for v in values if v and v.get(key) is not None]
    if not found:
        return "n/a"
    text = " / ".join(f"{x:.0f}" for x in found)
    loaded = [v for v in values if v and v.get("loaded")]
    return text + (f" (LOADED: {len(loaded)} of {len(values)})" if loaded else "")


def _loss(values: Sequence[Optional[float]]) -> str:
    found = [v for v in values if v is not None]
    return " / ".join(f"{v:.3g}" for v in found) if found else "n/a"  # MiniLM starts near 0


def page_lines(record: Dict[str, Any]) -> List[str]:
    """The page's body (after the header that `harness.write_page` writes) from a results record."""
    rows = record.get("rows", {})
    loaded = any(t.get("loaded") for row in rows.values() for seed in row.get("timings", {}).values()
                 for t in seed.values() if t)
    lines = []
    if loaded:
        lines += ["**LOADED**: other processes used more than "
                  f"{record['settings'].get('max_load', 0.5):g} cores during some timings (marked below); "
                  "compare the wall times only as an indication.", ""]
    lines += ["Does each method, trained by this toolkit, end where a reference trainer ends from the same "
              "start, on the same examples in the same order, with the same settings? Both final models are "
              "scored by the same evaluator: the toolkit's STS scoring (Spearman x100 of the cosines; STS avg is "
              "the mean of STS12-16, STS-B test and SICK-R) on the toolkit's encoder built from each side's saved "
              "weights. With `--dropout=0` both trainers are deterministic, and their models should agree to "
              "rounding.", "", RULE, ""]
    start = record.get("start") or {}
    if start.get("sts_avg") is not None:
        lines += [f"The start itself (untrained, mean pooling): STS avg {start['sts_avg']:.2f}, STS-B dev "
                  f"{start['stsb_dev']:.2f}.", ""]
    carried = {name: row["carried"] for name, row in rows.items() if row.get("carried")}
    if carried:
        lines += ["Rows carried from an earlier run of this benchmark (this invocation did not run them; their "
                  "numbers are that run's, measured as its header said):", ""]
        groups: Dict[str, List[str]] = {}
        for name, where in carried.items():
            text = "; ".join(f"{k.lower()} {v}" for k, v in where.items())
            groups.setdefault(text, []).append(rows[name].get("title", name))
        lines += [f"- {', '.join(titles)}: {text}" for text, titles in groups.items()]
        lines.append("")
    lines += ["What differs between the sides by construction:", ""] + [f"- {d}" for d in SIDE_DIFFERENCES] + [""]
    lines += ["| row | metric | toolkit | reference | difference | seed noise | se | verdict |",
              "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name, row in rows.items():
        for page_row in row.get("page_rows", []):
            scores = row["scores"].get(page_row["key"], {})
            for metric, label in METRICS:
                c = compare(scores, metric)
                if c is None:
                    lines.append(f"| {page_row['title']} | {label} | n/a | n/a | | | | NOT RUN |")
                    continue
                lines.append(f"| {page_row['title']} | {label} | {c.side(TOOLKIT)} | {c.side(REFERENCE)} | "
                             f"{c.difference:+.2f} | {c.noise:.2f} | {c.se:.2f} | {c.verdict()} |")
    lines += ["", "Each side's score per seed (STS avg / STS-B dev):", ""]
    for name, row in rows.items():
        for page_row in row.get("page_rows", []):
            for seed, sides in sorted(row["scores"].get(page_row["key"], {}).items()):
                parts = [f"{side} {s['sts_avg']:.2f} / {s['stsb_dev']:.2f}" for side, s in sides.items()
                         if "sts_avg" in s]
                lines.append(f"- {page_row['title']}, seed {seed}: {'; '.join(parts)}")
    lines += curve_lines(rows)
    lines += ["", "## Training losses and wall times", "",
              "Training loss at step 1 (the same batch and the same weights on both sides; only the dropout masks "
              "differ) and over the last tenth of the steps, per seed; wall time of each side per seed in seconds "
              "(toolkit: `train()` in this process, from building the model to publishing the artifact, its "
              "STS-B dev evaluations during training included and also shown alone; reference: the worker "
              "process, from its start to its saved model, and its fit alone, without the saving of the "
              "snapshots its curve is scored on). Seeds alternate toolkit, reference.", "",
              "| row | toolkit loss step 1 | reference loss step 1 | toolkit loss last tenth | reference loss last "
              "tenth | toolkit wall (s) | toolkit evaluations (s) | reference wall (s) | reference fit only (s) |",
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name, row in rows.items():
        for page_row in row.get("page_rows", []):
            losses = row.get("losses", {}).get(page_row["key"], {})
            timings = row.get("timings", {})
            key = page_row.get("timing_key", page_row["key"])

            def side_values(side, field, source=losses):
                return [source[s].get(side, {}).get(field) for s in sorted(source)]

            lines.append(
                f"| {page_row['title']} | {_loss(side_values(TOOLKIT, 'first'))} | "
                f"{_loss(side_values(REFERENCE, 'first'))} | {_loss(side_values(TOOLKIT, 'last_tenth'))} | "
                f"{_loss(side_values(REFERENCE, 'last_tenth'))} | "
                + (f"{_seconds([timings[s].get(TOOLKIT) for s in sorted(timings)])} | "
                   f"{_seconds([timings[s].get(TOOLKIT) for s in sorted(timings)], 'eval_seconds')} | "
                   f"{_seconds([timings[s].get(REFERENCE) for s in sorted(timings)])} | "
                   f"{_seconds([timings[s].get(REFERENCE) for s in sorted(timings)], 'fit_seconds')} |"
                   if key == page_row["key"] else "(cycle: see the row above) | | | |"))
    for name, row in rows.items():
        if row.get("notes"):
            lines += ["", f"### {row['title']}", ""] + [f"- {n}" for n in row["notes"]]
    lines += _pause_lines(record.get("pause"))
    lines += ["", "## DeCLUTR", "",
              "No reference trainer: the official DeCLUTR code is AllenNLP on PyTorch 1.x, and the reference "
              "environment holds no AllenNLP. Its formulas are checked by these tests (`make test`):", ""]
    lines += [f"- `{name}`: {what}" for name, what in FORMULA_TESTS["declutr"]]
    settings = record.get("settings", {})
    if settings:
        lines += ["", "## Settings", ""] + [f"- {k}: {v}" for k, v in settings.items()]
    return lines


def curve_table(curves: Dict[str, Dict[str, List[List[float]]]]) -> List[Tuple[int, Optional[Comparison]]]:
    """(step, Comparison of the seeds' STS-B dev at that step) for every step either side evaluated."""
    by_step: Dict[int, Dict[str, Dict[str, Dict[str, float]]]] = {}
    for seed, sides in curves.items():
        for side, points in sides.items():
            for step, value in points:
                by_step.setdefault(int(step), {}).setdefault(seed, {})[side] = {"stsb_dev": value}
    return [(step, compare(by_step[step], "stsb_dev")) for step in sorted(by_step)]


def curve_lines(rows: Dict[str, Any]) -> List[str]:
    """The page's section of STS-B dev during training: per row, step by step, both sides and the verdict."""
    with_curves = {name: row for name, row in rows.items() if row.get("curves")}
    if not with_curves:
        return []
    lines = ["", "## STS-B dev during training", "",
             "STS-B dev (Spearman x100) at each evaluation during training, mean ± sd over the seeds, with the "
             "verdict of the rule above at each step. The toolkit's run evaluates itself (`--eval_every`, the "
             "`StsbDevEvaluator` train.py uses); the reference's model is saved at the same steps and scored "
             "afterwards by the same evaluator on the toolkit's encoder of each snapshot, at the start's own "
             "maximum length, as the run's own evaluation embeds. The last step's scores equal the final "
             "models' STS-B dev above. The evaluations do not touch training on either side: "
             "they run without dropout and consume no example. The points of one curve come from the same runs, "
             "so they are not independent draws: a lead held over consecutive steps is one observation, to be "
             "read against its se. The Trans-Encoder phases are compared at their ends only.", "",
             "![STS-B dev during training](curves.png)"]
    for name, row in with_curves.items():
        lines += ["", f"{row['title']}:", "",
                  "| step | toolkit | reference | difference | seed noise | se | verdict |",
                  "| --- | --- | --- | --- | --- | --- | --- |"]
        table = curve_table(row["curves"])
        for step, c in table:
            if c is None:
                lines.append(f"| {step} | | | | | | one side only |")
            else:
                lines.append(f"| {step} | {c.side(TOOLKIT)} | {c.side(REFERENCE)} | {c.difference:+.2f} | "
                             f"{c.noise:.2f} | {c.se:.2f} | {c.verdict()} |")
        decided = [(step, c) for step, c in table if c is not None and c.outcome != UNDECIDED]
        if decided:
            equal = sum(c.outcome == EQUAL for _, c in decided)
            step, widest = max(decided, key=lambda sc: abs(sc[1].difference))
            lines += ["", f"EQUAL at {equal} of {len(decided)} steps; the widest difference is "
                      f"{widest.difference:+.2f} at step {step} (seed noise there {widest.noise:.2f})."]
    return lines


def plot_curves(rows: Dict[str, Any], path: str) -> Optional[str]:
    """Draws each row's STS-B dev curves (one panel per row; each seed thin, the mean thick) into `path`."""
    with_curves = {name: row for name, row in rows.items() if row.get("curves")}
    if not with_curves:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(with_curves), figsize=(5.5 * len(with_curves), 4), squeeze=False)
    for ax, row in zip(axes[0], with_curves.values()):
        for side, color in ((TOOLKIT, "tab:blue"), (REFERENCE, "tab:orange")):
            for points in (sides.get(side, []) for sides in row["curves"].values()):
                if points:
                    ax.plot(*zip(*points), color=color, alpha=0.3, linewidth=0.8)
            means = [(step, c._mean(c.toolkit if side == TOOLKIT else c.reference))
                     for step, c in curve_table(row["curves"]) if c is not None]
            if means:
                ax.plot(*zip(*means), color=color, linewidth=2, label=f"{side} (mean over seeds)")
        ax.set_title(row["title"])
        ax.set_xlabel("step")
        ax.set_ylabel("STS-B dev (Spearman x100)")
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _pause_lines(pause: Optional[Dict[str, Any]]) -> List[str]:
    lines = ["", "## PAUSE", "",
             "No PyTorch trainer exists. The loss formulas are checked against NumPy by these tests:", ""]
    lines += [f"- `{name}`: {what}" for name, what in FORMULA_TESTS["pause"]]
    lines += ["", "The official trainer end to end (`bench/pause_official_train.py`): the PAUSE rows of the table "
                  "above, with their notes. One step on a fixture, the official `SiameseModel.train_step` and "
                  "loss against the toolkit's, under this TensorFlow with tf-keras (`bench/pause_official.py`):", ""]
    if pause and pause.get("carried"):
        lines.append("- Carried from an earlier run: " + "; ".join(f"{k.lower()} {v}"
                                                                   for k, v in pause["carried"].items()) + ".")
    if not pause:
        lines.append("- Not run: give `--pause_code=<checkout of EQTPartners/pause>` with `--rows=pause`.")
        return lines
    if pause.get("commit"):
        lines.append(f"- Official code at commit {pause['commit']}.")
    if pause.get("embed_model_error"):
        lines.append(f"- The official `EmbedModel` on its tfhub.dev URL cannot be built here: "
                     f"`{pause['embed_model_error']}` (no network; the end-to-end rows build it on the start "
                     "exported with `export.py --format=tfhub-bert`). This check feeds both heads the same fixed "
                     "sentence embeddings (the toolkit's random_tiny encoder's), so that it compares the loss and "
                     "the head alone, without dropout.")
    if pause.get("error"):
        lines.append(f"- The check could not run: `{pause['error']}`")
    for case in pause.get("cases", []):
        lines.append(f"- {case['name']}: official loss {case['official_loss']:.6f}, toolkit loss "
                     f"{case['toolkit_loss']:.6f}, largest head-gradient difference {case['max_grad_diff']:.2e} "
                     f"(largest gradient {case['max_grad']:.2e}): **{case['outcome']}**"
                     + (f". {case['note']}" if case.get("note") else ""))
    return lines


def write_results(record: Dict[str, Any], results_dir: str, load: Optional[harness.Load]) -> str:
    """Writes the page and results.json; returns the page's text."""
    settings = record.get("settings", {})
    setting = [f"Start: {settings.get('start', 'n/a')}; {settings.get('steps', 'n/a')} steps of "
               f"{settings.get('batch_size', 'n/a')}; seeds {settings.get('seeds', 'n/a')}"]
    versions = record.get("versions", {})
    if versions:
        setting.append("Versions: " + "; ".join(f"{k} {v}" for k, v in versions.items()))
    plot_curves(record.get("rows", {}), os.path.join(results_dir, "curves.png"))
    return harness.write_page(results_dir, "Training parity with reference trainers", "bench.parity",
                              page_lines(record), record, load, setting)


# === Work folders, timing ===

def settings_key(row: str, settings: Dict[str, Any]) -> str:
    """`<row>-<digest of the row's settings>`: another setting trains into another folder."""
    digest = hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode()).hexdigest()[:10]
    return f"{row}-{digest}"


def read_json(path: str) -> Optional[Dict[str, Any]]:
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def write_json(path: str, data: Any) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1)
    os.replace(tmp, path)


class Stopwatch:
    """Wall seconds of a stretch and the cores other processes used meanwhile (`harness.other_cores`:
    the machine's busy CPU time minus this process's and its waited-for children's)."""

    def __init__(self, max_load: float):
        self.max_load = max_load

    def __enter__(self):
        self.start = (time.time(), harness.machine_busy_ticks(), harness.process_ticks())
        return self

    def __exit__(self, *exc):
        now = (time.time(), harness.machine_busy_ticks(), harness.process_ticks())
        self.seconds = round(now[0] - self.start[0], 1)
        self.other_cores = None if now[1] is None or self.start[1] is None else harness.other_cores(self.start, now)
        return False

    def record(self) -> Dict[str, Any]:
        busy = self.other_cores if self.other_cores is not None else os.getloadavg()[0]
        loaded = busy > self.max_load
        return {"seconds": self.seconds, "other_cores": self.other_cores, "loaded": loaded}


def timing(record: Dict[str, Any]) -> Dict[str, Any]:
    """The timing fields of a side's done.json record."""
    return {k: record[k] for k in ("seconds", "fit_seconds", "eval_seconds", "snapshot_seconds", "other_cores",
                                   "loaded", "resumed") if k in record}


def ordered_rows(columns: Sequence[Sequence[Any]], batch_size: int, steps: int, seed: int) -> List[int]:
    """The row indices the toolkit's sampler (`common.data.sampling.StreamSampler` over one stream of every
    row, as every method's `make_data` builds it) draws for `steps` batches of `batch_size` with `seed`."""
    import numpy as np

    from common.data.sampling import StreamSampler

    sampler = StreamSampler([np.arange(len(columns[0]))], [1.0], batch_size, seed)
    indices: List[int] = []
    for step, batch in enumerate(sampler.batches()):
        if step == steps:
            break
        indices.extend(int(i) for i in batch)
    return indices


def step_losses(log_dir: str, phase: str = "") -> List[float]:
    """The `train/loss` the toolkit logged at every step (log_every=1) of a run or one of its phases."""
    from common.training.curves import read_scalars

    series = read_scalars(log_dir).get(phase, {}).get("train/loss")
    return list(series.values) if series is not None else []


def loss_summary(losses: Sequence[float]) -> Dict[str, Optional[float]]:
    if not losses:
        return {"first": None, "last_tenth": None}
    tail = losses[-max(1, len(losses) // 10):]
    return {"first": float(losses[0]), "last_tenth": float(sum(tail) / len(tail))}


# === The two sides ===

class Bench:
    """The runs of one invocation: toolkit runs in this process, reference jobs in the worker."""

    def __init__(self, work_dir: str, data_path: str, start: str, start_name: str, reference_python: str,
                 threads: int, max_load: float, score_max_seq_len: int):
        self.work_dir, self.data_path, self.start, self.start_name = work_dir, data_path, start, start_name
        self.reference_python, self.threads, self.max_load = reference_python, threads, max_load
        self.score_max_seq_len = score_max_seq_len
        self.worker_versions: Dict[str, Any] = {}

    # --- toolkit ---

    def toolkit(self, folder: str, method: str, settings: Dict[str, Any]) -> Dict[str, Any]:
        """Trains (or reuses, or resumes) a toolkit run in `folder`; returns its done.json record."""
        from common.training.loop import RunPaths
        from common.training.registry import build_config
        from common.training.runs import train

        done = read_json(os.path.join(folder, "done.json"))
        if done is not None:
            return done
        config = build_config(method, {"checkpoint_every": 100, "log_every": 1, "eval_each_epoch": False, **settings,
                                       "data_path": self.data_path, "artifacts_dir": folder})
        ckpt = os.path.join(folder, "ckpt")
        started = sorted(os.listdir(ckpt)) if os.path.isdir(ckpt) else []
        if started:
            logging.info("Resuming %s (%s).", folder, started[-1])
            config = config.replace(resume=started[-1])
        evaluator = TimedEvaluator(self.data_path) if config.run.eval_every else None
        with Stopwatch(self.max_load) as watch:
            result = train(config, evaluator=evaluator)
        paths = RunPaths.for_run(folder, result["run_id"])
        extra = {}
        if evaluator is not None:
            extra = {"eval_seconds": round(evaluator.seconds, 1),
                     "curve": toolkit_curve(os.path.join(folder, os.path.relpath(paths.log_dir, folder)))}
        record = {**watch.record(), **extra, "resumed": bool(started), "run_id": result["run_id"],
                  "model_dir": os.path.relpath(result["model_dir"], folder),
                  "log_dir": os.path.relpath(paths.log_dir, folder),
                  "ckpt_dir": os.path.relpath(paths.checkpoint_dir, folder), "data": result["data"],
                  "config": result["config"].to_dict()}
        write_json(os.path.join(folder, "done.json"), record)
        return record

    # --- reference ---

    def reference(self, folder: str, job: Dict[str, Any]) -> Dict[str, Any]:
        """Runs (or reuses) one worker job in `folder`; returns its result with the wall time."""
        done = read_json(os.path.join(folder, "done.json"))
        if done is not None:
            self.worker_versions = done.get("versions", self.worker_versions)  # a page of cached runs names them too
            return done
        if not os.path.exists(self.reference_python):
            raise FileNotFoundError(f"{self.reference_python} not found: build the reference environment with "
                                    "`make reference-env` or pass --reference_python.")
        if os.path.isdir(folder):
            shutil.rmtree(folder)  # an interrupted job starts over
        os.makedirs(folder)
        job_path = os.path.join(folder, "job.json")
        write_json(job_path, {**job, "threads": self.threads})
        env = {**os.environ, "OMP_NUM_THREADS": str(self.threads), "MKL_NUM_THREADS": str(self.threads),
               "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
        with Stopwatch(self.max_load) as watch:
            proc = subprocess.run([self.reference_python, os.path.join(REPO, "bench", "parity_worker.py"),
                                   f"--job={job_path}", f"--out={folder}"], env=env, cwd=REPO,
                                  capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"the reference worker failed (exit {proc.returncode}) on {job_path}:\n"
                               f"{proc.stderr[-4000:]}")
        result = read_json(os.path.join(folder, "result.json"))
        os.remove(job_path)  # the examples are large; the settings are in the record
        record = {**watch.record(), "fit_seconds": round(result["seconds"], 1), "losses": result["losses"],
                  "snapshot_steps": result.get("snapshot_steps", []),
                  "snapshot_seconds": round(result.get("snapshot_seconds", 0.0), 1),
                  "versions": {k: result[k] for k in ("torch", "sentence_transformers", "transformers", "tokenizers",
                                                      "torch_threads")},
                  "job": {k: v for k, v in job.items() if k not in ("examples", "labels")}}
        write_json(os.path.join(folder, "done.json"), record)
        self.worker_versions = record["versions"]
        return record

    # --- scoring ---

    def score_encoder(self, folder: str, spec: str, pooling: Optional[str],
                      own_length: bool = False) -> Dict[str, float]:
        """STS of a bi-encoder (a toolkit artifact or a Hugging Face folder), cached in `folder`/scores.json:
        at `score_max_seq_len` tokens, or with `own_length` at the model's own (a "padded_mean" run's:
        the length its mean is over)."""
        path = os.path.join(folder, "scores.json")
        cached = read_json(path)
        if cached is not None:
            return cached
        from common.loading.embedding import embed_sentences
        from common.evaluation.sts import evaluate_sts
        from common.models.encoder import EncoderConfig, build_encoder

        length = None if own_length else self.score_max_seq_len
        encoder = build_encoder(EncoderConfig(spec=spec, pooling=pooling, max_seq_len=length))
        fn = encoder.embedding_function()
        sts = evaluate_sts(lambda s: embed_sentences(fn, s, 128, progress=False), self.data_path)
        scores = {"sts_avg": sts["avg"], "stsb_dev": sts["stsb"]["dev"]}
        write_json(path, scores)
        return scores

    def score_cross(self, folder: str, saved_model: str) -> Dict[str, float]:
        """STS of a cross-encoder SavedModel (a toolkit artifact's `cross/`), cached in `folder`/scores.json."""
        path = os.path.join(folder, "scores.json")
        cached = read_json(path)
        if cached is not None:
            return cached
        from common.loading.resolve import resolve_cross_model
        from common.evaluation.sts import evaluate_sts_pairs

        scorer = resolve_cross_model(saved_model)
        sts = evaluate_sts_pairs(lambda a, b: scorer.score(a, b, 128, progress=False), self.data_path)
        scores = {"sts_avg": sts["avg"], "stsb_dev": sts["stsb"]["dev"]}
        write_json(path, scores)
        return scores


    @functools.cached_property
    def start_max_seq_len(self) -> int:
        """The start's own maximum length: the length a toolkit run evaluates itself at (`with_length()`)."""
        from common.models.encoder import EncoderConfig, build_encoder

        return build_encoder(EncoderConfig(spec=self.start)).model_max_seq_len

    def reference_curve(self, folder: str, steps: Sequence[int], pooling: str) -> List[List[float]]:
        """STS-B dev of the reference's snapshots (`folder`/snapshots/step_<k>/), scored as the toolkit's run
        scores itself during training: `StsbDevEvaluator` on the toolkit's encoder of the snapshot (the
        row's pooling), at the start's own length, as the run's `with_length()` embeds (not the snapshot's
        own: sentence-transformers writes the training length into its tokenizer_config.json). Cached in
        `folder`/curve.json; the snapshots are then removed (the final one is a link to `model/`, which
        stays)."""
        path = os.path.join(folder, "curve.json")
        cached = read_json(path)
        if cached is not None:
            shutil.rmtree(os.path.join(folder, "snapshots"), ignore_errors=True)  # left by an interruption
            return cached
        from common.evaluation.evaluators import StsbDevEvaluator
        from common.models.encoder import EncoderConfig, build_encoder

        evaluator = StsbDevEvaluator(self.data_path, progress=False)
        points = []
        for step in steps:
            snapshot = os.path.join(folder, "snapshots", f"step_{step}")
            encoder = build_encoder(EncoderConfig(spec=snapshot, pooling=pooling, max_seq_len=self.start_max_seq_len))
            embed_fn = encoder.with_length(self.start_max_seq_len).embedding_function()
            score = evaluator(embed_fn)[evaluator.primary_metric]
            points.append([int(step), round(float(score), 4)])
        write_json(path, points)
        shutil.rmtree(os.path.join(folder, "snapshots"))
        return points


class TimedEvaluator:
    """The toolkit run's STS-B dev evaluator (train.py's), keeping the seconds its evaluations take."""

    def __init__(self, data_path: str):
        from common.evaluation.evaluators import StsbDevEvaluator

        self.inner = StsbDevEvaluator(data_path, progress=False)
        self.seconds = 0.0

    def __getattr__(self, name: str):
        return getattr(self.inner, name)  # the evaluator's contract: name, primary_metric, greater_is_better

    def __call__(self, embed_fn) -> Dict[str, float]:
        began = time.perf_counter()
        try:
            return self.inner(embed_fn)
        finally:
            self.seconds += time.perf_counter() - began


def toolkit_curve(log_dir: str) -> List[List[float]]:
    """The STS-B dev evaluations a toolkit run logged (`eval/stsb_dev_spearman`), as [[step, score], ...]."""
    from common.evaluation.evaluators import StsbDevEvaluator
    from common.training.curves import read_scalars

    series = read_scalars(log_dir).get("", {}).get(f"eval/{StsbDevEvaluator.primary_metric}")
    if series is None:
        return []
    return [[int(step), round(float(value), 4)] for step, value in zip(series.steps, series.values)]


def curve_every(steps: int, points: int) -> int:
    """Steps between the STS-B dev evaluations of a curve of `points` points over `steps` steps (0: no curve)."""
    return max(1, steps // points) if points else 0


def write_cross_start(config, start: str, folder: str) -> str:
    """The toolkit's cross-encoder as its phase begins, as a `BertForSequenceClassification` folder: the
    start's BERT with the pooler and classifier the toolkit's run draws from its seed (the masked-LM
    start has neither), so that both sides' cross-encoders begin from the same weights.

    The model is built as `trans_encoder_tf.method.compiled_phase_model` builds it: inside
    `seeded(config.run.seed)`, so the draws are the run's.
    """
    if os.path.isfile(os.path.join(folder, "model.safetensors")):
        return folder
    from safetensors.numpy import save as safetensors_bytes

    from common.models import hf_weights
    from common.training.runs import seeded
    from trans_encoder_tf.method import build_phase_model

    with seeded(config.run.seed):
        model = build_phase_model(config, "cross", "a")
    if model.pooler is not None:
        raise UserError("--start: the trans_encoder row needs a BERT the toolkit builds (its pooler is BERT's); "
                        "got a TF Hub model.")
    tensors = {f"bert.{k}": v for k, v in hf_weights.hf_state_dict(model.encoder.backbone).items()}
    tensors["classifier.weight"] = model.classifier.kernel.numpy().T  # Keras [in, out] -> torch Linear [out, in]
    tensors["classifier.bias"] = model.classifier.bias.numpy()
    tmp = folder + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    for name in HF_FOLDER_FILES:  # a plain Hugging Face folder: no sentence-transformers modules
        if os.path.isfile(os.path.join(start, name)):
            shutil.copy(os.path.join(start, name), tmp)
    with open(os.path.join(tmp, "model.safetensors"), "wb") as f:
        f.write(safetensors_bytes(tensors, metadata={"format": "pt"}))
    shutil.rmtree(folder, ignore_errors=True)
    os.replace(tmp, folder)
    return folder


def export_reference_cross(hf_folder: str, max_seq_len: int, out: str) -> str:
    """The reference cross-encoder (a `BertForSequenceClassification` folder) as the toolkit's
    CrossEncoderModel, exported as the SavedModel `test_sts.py --mode=cross` scores: the same scorer
    as the toolkit side's `cross/`."""
    if os.path.isdir(out):
        return out
    from common.models import hf_weights
    from common.models.encoder import EncoderConfig, build_encoder
    from common.export.saved_model import export_cross_encoder
    from trans_encoder_tf.model import CrossEncoderModel

    model = CrossEncoderModel(build_encoder(EncoderConfig(spec=hf_folder, max_seq_len=max_seq_len)))
    tensors = hf_weights.hf_tensors(os.path.join(hf_folder, "model.safetensors"))
    missing = [k for k in ("classifier.weight", "classifier.bias", "pooler.dense.weight") if k not in tensors]
    if missing:
        raise ValueError(f"{hf_folder}: no {missing}; expected a BertForSequenceClassification checkpoint")
    model.classifier.kernel.assign(tensors["classifier.weight"].T)  # torch Linear [out, in] -> Keras [in, out]
    model.classifier.bias.assign(tensors["classifier.bias"])
    tmp = out + ".tmp"
    if os.path.isdir(tmp):
        shutil.rmtree(tmp)
    export_cross_encoder([model], tmp)
    os.replace(tmp, out)
    return out


# === Rows ===

@dataclasses.dataclass
class Row:
    """What a row writes into the record: its page rows, scores, losses, timings and notes."""

    name: str
    title: str
    settings: Dict[str, Any]
    page_rows: List[Dict[str, str]]
    scores: Dict[str, Dict[str, Dict[str, Any]]] = dataclasses.field(default_factory=dict)
    losses: Dict[str, Dict[str, Dict[str, Any]]] = dataclasses.field(default_factory=dict)
    timings: Dict[str, Dict[str, Any]] = dataclasses.field(default_factory=dict)
    notes: List[str] = dataclasses.field(default_factory=list)
    # {seed: {side: [[step, STS-B dev], ...]}}: the STS-B dev evaluations during training.
    curves: Dict[str, Dict[str, List[List[float]]]] = dataclasses.field(default_factory=dict)

    def put(self, kind: str, key: str, seed: int, side: str, value: Any) -> None:
        getattr(self, kind).setdefault(key, {}).setdefault(str(seed), {})[side] = value

    def as_record(self) -> Dict[str, Any]:
        return {"title": self.title, "settings": self.settings, "page_rows": self.page_rows, "scores": self.scores,
                "losses": self.losses, "timings": self.timings, "notes": self.notes, "curves": self.curves}


def _lr(default: float) -> float:
    return FLAGS.lr if FLAGS.lr is not None else default


def run_simcse(bench: Bench, mode: str, seeds: Sequence[int]) -> Row:
    """SimCSE (unsup or sup, mean pooling, no MLP) against MultipleNegativesRankingLoss."""
    from common.data.fingerprint import fingerprint_rows
    from simcse_tf.data import read_sentences, read_triples

    steps, batch = FLAGS.steps, FLAGS.batch_size
    train_data = tuple(FLAGS.unsup_train_data if mode == "unsup" else FLAGS.sup_train_data)
    lr = _lr(3e-5 if mode == "unsup" else 5e-5)
    temperature = 0.05
    settings = dict(model=bench.start, simcse_mode=mode, pooling="mean", train_data=train_data, batch_size=batch,
                    train_lr=lr, max_seq_len=FLAGS.max_seq_len, train_epochs=1, train_steps_per_epoch=steps,
                    warmup_fraction=0.0, weight_decay=0.0, clip_norm=0.0, temperature=temperature,
                    dropout=FLAGS.dropout)
    every = curve_every(steps, FLAGS.curve_points)
    if every:
        settings["eval_every"] = every  # absent without a curve: the folders of earlier runs stay valid
    name = f"simcse_{mode}"
    key = settings_key(name, {**settings, "score_max_seq_len": FLAGS.score_max_seq_len})
    title = f"SimCSE {mode} (mean pooling)"
    row = Row(name, title, {**settings, "model": bench.start_name}, [{"key": name, "title": title}])
    triples = tuple(read_triples(train_data, bench.data_path)) if mode == "sup" else None
    for seed in seeds:
        base = os.path.join(bench.work_dir, key, f"seed{seed}")
        # As simcse_tf.method reads them: `sentences:` sources are sampled by the run's seed (and
        # --max_sentences, default 10^6); the others are fixed.
        columns = triples or (read_sentences(train_data, bench.data_path, 1_000_000, seed),)
        done = bench.toolkit(os.path.join(base, TOOLKIT), "simcse", {**settings, "seed": seed})
        if done["data"]["fingerprint"] != fingerprint_rows(zip(*columns)):
            raise RuntimeError(f"{name} seed {seed}: the examples read here are not those the toolkit's run read "
                               f"(fingerprints differ); the reference side would train on other data.")
        indices = ordered_rows(columns, batch, steps, seed)
        examples = [[columns[0][i], columns[0][i]] if mode == "unsup" else [c[i] for c in columns] for i in indices]
        job = dict(loss="mnrl", start=bench.start, examples=examples, batch_size=batch, steps=steps, lr=lr,
                   adam_epsilon=ADAM_EPSILON, weight_decay=0.0, warmup_steps=0, clip_norm=0.0,
                   max_seq_len=FLAGS.max_seq_len, pooling="mean", scale=1.0 / temperature, seed=seed,
                   dropout=FLAGS.dropout, snapshot_every=every)
        ref = bench.reference(os.path.join(base, REFERENCE), job)
        if every:
            row.curves[str(seed)] = {
                TOOLKIT: done["curve"],
                REFERENCE: bench.reference_curve(os.path.join(base, REFERENCE), ref["snapshot_steps"], "mean")}
        row.timings[str(seed)] = {TOOLKIT: timing(done), REFERENCE: timing(ref)}
        row.put("losses", name, seed, TOOLKIT, loss_summary(step_losses(os.path.join(base, TOOLKIT, done["log_dir"]))))
        row.put("losses", name, seed, REFERENCE, loss_summary(ref["losses"]))
        row.put("scores", name, seed, TOOLKIT, bench.score_encoder(
            os.path.join(base, TOOLKIT), os.path.join(base, TOOLKIT, done["model_dir"]), "mean"))
        row.put("scores", name, seed, REFERENCE, bench.score_encoder(
            os.path.join(base, REFERENCE), os.path.join(base, REFERENCE, "model"), "mean"))
    row.notes += [
        f"Toolkit: `train.py --method=simcse --simcse_mode={mode} --pooling=mean --temperature={temperature:g} "
        f"--batch_size={batch} --train_lr={lr:g} --max_seq_len={FLAGS.max_seq_len} --train_steps_per_epoch={steps} "
        f"--train_data={','.join(train_data)}` (Adam, no warm-up, linear decay, no clip, no weight decay).",
        f"Reference: `MultipleNegativesRankingLoss(scale={1 / temperature:g})` over "
        + ("(s, s) pairs" if mode == "unsup" else "(premise, entailment, contradiction) triples")
        + f", `Transformer(max_seq_length={FLAGS.max_seq_len})` + `Pooling(mean)`, `old_fit` with AdamW "
        f"(weight decay 0, eps {ADAM_EPSILON:g}), `WarmupLinear` with 0 warm-up steps, no clip.",
        "SimCSE's MLP (the toolkit's `--pooling=cls_mlp`, the official unsup setting) has no counterpart in "
        "sentence-transformers; both sides train and are scored with mean pooling and no MLP.",
    ] + ([f"STS-B dev every {every} steps on both sides (toolkit `--eval_every={every}`; the reference's model "
          f"saved every {every} steps and scored afterwards)."] if every else [])
    return row


def te_schedule(n_pairs: int, batch: int, steps: int) -> Tuple[int, int]:
    """(epochs, steps per epoch) giving both Trans-Encoder phases `steps` steps or just over: the
    bi-encoder's pass over the pairs is the shorter (the cross-encoder sees both orders), and
    `train_steps_per_epoch` caps each phase's epoch (`trans_encoder_tf.method.phase_loop`)."""
    per_pass = math.ceil(n_pairs / batch)
    epochs = math.ceil(steps / per_pass)
    return epochs, math.ceil(steps / epochs)


def run_trans_encoder(bench: Bench, seeds: Sequence[int]) -> Row:
    """One Trans-Encoder cycle; its cross-encoder phase against CrossEncoder, its bi-encoder phase against
    CosineSimilarityLoss, each on the labels the toolkit's run computed."""
    import numpy as np

    from common.data.fingerprint import fingerprint_rows
    from common.data.sts import load_stsb
    from common.training.registry import build_config
    from trans_encoder_tf.method import pairs_of, phase_loop, optimizer_section

    batch = FLAGS.batch_size
    if batch > TE_CROSS_MAX_SEQ_LEN:
        raise UserError(f"--batch_size={batch}: sentence-transformers 6's CrossEncoder cannot train batches larger "
                        f"than its max length ({TE_CROSS_MAX_SEQ_LEN}; its collate asserts on the batch dimension); "
                        "use --batch_size<=64 for the trans_encoder row.")
    train = load_stsb(bench.data_path, "train")
    n = FLAGS.te_pairs or len(train.sentences1)
    cross_lr, bi_lr = _lr(2e-5), _lr(5e-5)
    epochs, per_epoch = te_schedule(n, batch, FLAGS.steps)
    base_settings = dict(model=bench.start, cycles=1, batch_size=batch, cross_batch_size=batch, train_epochs=epochs,
                         cross_epochs=epochs, train_steps_per_epoch=per_epoch, train_lr=bi_lr, cross_lr=cross_lr,
                         max_seq_len=FLAGS.max_seq_len, cross_max_seq_len=TE_CROSS_MAX_SEQ_LEN, evaluation_steps=0,
                         best_in_phase=False, dropout=FLAGS.dropout)
    key = settings_key("trans_encoder", {**base_settings, "pairs": n, "score_max_seq_len": FLAGS.score_max_seq_len})
    pairs_path = os.path.join(bench.work_dir, key, "pairs.jsonl")
    if not os.path.exists(pairs_path):
        os.makedirs(os.path.dirname(pairs_path), exist_ok=True)
        with open(pairs_path, "w", encoding="utf-8") as f:
            for a, b in zip(train.sentences1[:n], train.sentences2[:n]):
                f.write(json.dumps({"sentence1": a, "sentence2": b}) + "\n")
    settings = {**base_settings, "pairs": os.path.abspath(pairs_path)}
    titles = {"cross": "Trans-Encoder cross-encoder phase", "bi": "Trans-Encoder bi-encoder phase (mean pooling)"}
    row = Row("trans_encoder", "Trans-Encoder, one cycle",
              {**base_settings, "model": bench.start_name, "pairs": f"STS-B train, first {n}"},
              [{"key": "te_cross", "title": titles["cross"]},
               {"key": "te_bi", "title": titles["bi"], "timing_key": "te_cross"}])
    for seed in seeds:
        base = os.path.join(bench.work_dir, key, f"seed{seed}")
        done = bench.toolkit(os.path.join(base, TOOLKIT), "trans_encoder", {**settings, "seed": seed})
        config = build_config("trans_encoder", {**settings, "seed": seed, "data_path": bench.data_path})
        s1, s2, _ = pairs_of(config)
        if done["data"]["fingerprint"] != fingerprint_rows(zip(s1, s2)):
            raise RuntimeError(f"trans_encoder seed {seed}: the pairs read here are not those the toolkit's run read.")
        phases = os.path.join(base, TOOLKIT, done["ckpt_dir"], "phases")
        # The bi-encoder pools as its start does (a plain BERT folder: mean); the artifact records it.
        published = read_json(os.path.join(base, TOOLKIT, done["model_dir"], "config.json"))
        bi_pooling = published["encoder"].get("pooling") or "mean"
        refs = {}
        for index, kind in enumerate(("cross", "bi"), start=1):
            labels = np.load(os.path.join(phases, f"cycle1_{kind}_a", "labels.npy"))
            a, b, y = list(s1), list(s2), labels.astype(float).tolist()
            if kind == "cross":  # every pair in both orders, as trans_encoder_tf.method.phase_dataset
                a, b, y = a + list(s2), b + list(s1), y + y
            loop = phase_loop(config, kind, len(s1))
            # The driver seeds the phase with index i (1: cross, 2: bi) the sampler config.run.seed + i.
            indices = ordered_rows([a], batch, loop.total_steps, seed + index)
            optimizer = optimizer_section(config, kind)
            start = (write_cross_start(config, bench.start, os.path.join(base, "cross_start")) if kind == "cross"
                     else bench.start)
            job = dict(loss="cross" if kind == "cross" else "cosine", start=start,
                       examples=[[a[i], b[i]] for i in indices], labels=[y[i] for i in indices], batch_size=batch,
                       steps=loop.total_steps, lr=optimizer.train_lr, adam_epsilon=ADAM_EPSILON,
                       weight_decay=optimizer.weight_decay, warmup_steps=optimizer.warmup_steps(loop.total_steps),
                       clip_norm=optimizer.clip_norm,
                       max_seq_len=TE_CROSS_MAX_SEQ_LEN if kind == "cross" else FLAGS.max_seq_len,
                       pooling=bi_pooling, seed=seed, dropout=FLAGS.dropout)
            refs[kind] = bench.reference(os.path.join(base, f"{REFERENCE}_{kind}"), job)
            row.put("losses", f"te_{kind}", seed, TOOLKIT,
                    loss_summary(step_losses(os.path.join(base, TOOLKIT, done["log_dir"]), f"cycle1_{kind}_a")))
            row.put("losses", f"te_{kind}", seed, REFERENCE, loss_summary(refs[kind]["losses"]))
        model_dir = os.path.join(base, TOOLKIT, done["model_dir"])
        row.put("scores", "te_bi", seed, TOOLKIT, bench.score_encoder(os.path.join(base, TOOLKIT, "bi"), model_dir,
                                                                     bi_pooling))
        row.put("scores", "te_bi", seed, REFERENCE, bench.score_encoder(
            os.path.join(base, f"{REFERENCE}_bi"), os.path.join(base, f"{REFERENCE}_bi", "model"), bi_pooling))
        row.put("scores", "te_cross", seed, TOOLKIT, bench.score_cross(os.path.join(base, TOOLKIT, "cross"),
                                                                      model_dir))
        exported = export_reference_cross(os.path.join(base, f"{REFERENCE}_cross", "model"), TE_CROSS_MAX_SEQ_LEN,
                                          os.path.join(base, f"{REFERENCE}_cross", "saved_model"))
        row.put("scores", "te_cross", seed, REFERENCE, bench.score_cross(os.path.join(base, f"{REFERENCE}_cross"),
                                                                        exported))
        both = {"seconds": round(refs["cross"]["seconds"] + refs["bi"]["seconds"], 1),
                "fit_seconds": round(refs["cross"]["fit_seconds"] + refs["bi"]["fit_seconds"], 1),
                "loaded": refs["cross"]["loaded"] or refs["bi"]["loaded"]}
        row.timings[str(seed)] = {TOOLKIT: timing(done), REFERENCE: both}
    cross_steps = phase_loop(build_config("trans_encoder", {**settings, "data_path": bench.data_path}), "cross", n)
    row.notes += [
        f"Pairs: the first {n} STS-B train pairs (no evaluation set), deduplicated by the toolkit; each phase runs "
        f"{cross_steps.total_steps} steps of {batch} ({epochs} epoch(s) of {per_epoch}); the cross-encoder phase "
        "sees every pair in both orders.",
        f"Cross-encoder phase: labels are the start bi-encoder's cosines ({bi_pooling} pooling), computed once by "
        f"the toolkit's run and given to both sides; AdamW lr {cross_lr:g}, weight decay 0.01, 10 % warm-up, "
        f"linear decay, clip 1, max length {TE_CROSS_MAX_SEQ_LEN}. Toolkit: `soft_bce_with_logits_loss`; reference: "
        "`CrossEncoder(num_labels=1)`, whose `old_fit` default loss for one label is `BCEWithLogitsLoss`. Both "
        "sides' cross-encoders begin from the same weights: the reference loads the toolkit's initial "
        "cross-encoder (the start's BERT with the pooler and classifier the toolkit's run draws from its seed) "
        "as a `BertForSequenceClassification` folder.",
        f"Bi-encoder phase: labels are the toolkit cross-encoder's sigmoid scores of the same seed (its phase's "
        f"`labels.npy`), given to both sides; AdamW lr {bi_lr:g}, weight decay 0.01, no warm-up, linear decay, "
        f"clip 1, max length {FLAGS.max_seq_len}. Toolkit: `cosine_mse_loss`; reference: `CosineSimilarityLoss`.",
        "Each phase ends with its last step (`--nobest_in_phase`, no STS-B dev selection), on both sides.",
        "Wall times are of the whole cycle: the toolkit's one run (labelling the pairs twice, both phases, the "
        "export) against the sum of the reference's two phase processes.",
    ]
    return row


# The toolkit's flags that train as the official PAUSE code does (docs/methods/pause.md).
PAUSE_ORIGINAL_FLAGS = {"pooling": "padded_mean", "lr_decay_from": "start", "annealing": "per_epoch",
                        "batch_without_labels": "zero"}
# The official train_nli.py's defaults that both sides take (its --prior, --train_lr; the end rate and
# 10 % warm-up it hard-codes).
PAUSE_PRIOR, PAUSE_LR, PAUSE_END_LR, PAUSE_WARMUP = 1.0 / 3.0, 7.5e-5, 5e-6, 0.1
PAUSE_TRAIN_DATA = ("senteval:dev", "senteval:test")
# The official flags that name this machine's folders, left off the page.
RUN_FOLDER_FLAGS = ("--log_dir=", "--model_dir=")
PAUSE_SIDE_DIFFERENCES = (
    "Batches: the same labelled split (the toolkit run's, checked by fingerprint) and the same mixing (each class "
    "stream prior/3 of a batch, the unlabelled stream the rest), drawn by each side's own sampler: the official "
    "`make_dataset` (`sample_from_datasets` over four shuffled, repeated TFRecord streams, seeded by "
    "`set_random_seed`), the toolkit's `StreamSampler`. The same kind of batches, not the same batches.",
    "Tokenization: the official `text.BertTokenizer(vocab_file, lower_case=True)` with its own [CLS]/[SEP] and "
    "padding to --max_seq_len; the toolkit's in-graph WordPiece with `--pooling=padded_mean` padding to the same "
    "length. The same vocabulary (the export's `vocab_file` is the start's).",
    "Initial head weights and dropout masks come from each side's own generator.",
    "The official code ran on TensorFlow 2.4 with Keras 2; here it runs on this TensorFlow with tf-keras.",
)


def write_official_records(folder: str, pairs, labels, names: Sequence[str]) -> str:
    """The labelled split as the official `make_dataset` reads it: GZIP TFRecords of tf.Examples
    (`sentence`, `match_sentence`, `label` int64, `gold_label`, `uuid`), one folder per class stream
    (named by the class), `unl/` for the unlabelled pairs (label -1) and `eval/` (the labelled pairs:
    the official `fit` reports on them after each epoch; nothing is selected on them)."""
    import numpy as np
    import tensorflow as tf

    if os.path.isfile(os.path.join(folder, "done")):
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    labels = np.asarray(labels)
    streams = {name: np.flatnonzero(labels == c) for c, name in enumerate(names)}
    streams["unl"] = np.flatnonzero(labels < 0)
    streams["eval"] = np.flatnonzero(labels >= 0)

    def example(i: int) -> bytes:
        def text(value: str):
            return tf.train.Feature(bytes_list=tf.train.BytesList(value=[value.encode("utf-8")]))

        def number(value: int):
            return tf.train.Feature(int64_list=tf.train.Int64List(value=[int(value)]))

        label = int(labels[i])
        features = {"sentence": text(pairs.premises[i]), "match_sentence": text(pairs.hypotheses[i]),
                    "label": number(label), "gold_label": text(names[label] if label >= 0 else "-"),
                    "uuid": number(i)}
        return tf.train.Example(features=tf.train.Features(feature=features)).SerializeToString()

    for stream, rows in streams.items():
        os.makedirs(os.path.join(folder, stream))
        with tf.io.TFRecordWriter(os.path.join(folder, stream, "part-00000.tfrecord.gz"), options="GZIP") as w:
            for i in rows:
                w.write(example(int(i)))
    with open(os.path.join(folder, "done"), "w") as f:
        f.write(json.dumps({k: len(v) for k, v in streams.items()}))
    return folder


def official_embedder(saved_model: str):
    """The official `EmbedModel`'s SavedModel (its serving signature parses tf.Examples with a
    `sentence` feature) as an embedding function: list of sentences -> [n, H] array."""
    import numpy as np
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (registers the ops of the official tokenizer)

    serve = tf.saved_model.load(saved_model).signatures["serving_default"]

    def embed(sentences: Sequence[str]) -> "np.ndarray":
        out = []
        for i in range(0, len(sentences), 128):
            examples = [tf.train.Example(features=tf.train.Features(feature={"sentence": tf.train.Feature(
                bytes_list=tf.train.BytesList(value=[s.encode("utf-8")]))})).SerializeToString()
                for s in sentences[i:i + 128]]
            out.append(serve(examples=tf.constant(examples))["output"].numpy())
        return np.concatenate(out) if out else np.zeros([0, 0], np.float32)

    return embed


def score_function(folder: str, embed) -> Dict[str, float]:
    """STS of an embedding function, cached in `folder`/scores.json."""
    path = os.path.join(folder, "scores.json")
    cached = read_json(path)
    if cached is not None:
        return cached
    from common.evaluation.sts import evaluate_sts

    sts = evaluate_sts(embed, FLAGS.data_path)
    scores = {"sts_avg": sts["avg"], "stsb_dev": sts["stsb"]["dev"]}
    write_json(path, scores)
    return scores


def export_tfhub_start(start: str, folder: str) -> str:
    """The start as a TF-Hub-format BERT (`export.py --format=tfhub-bert`): what the official EmbedModel loads."""
    if os.path.isfile(os.path.join(folder, "saved_model.pb")):
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    proc = subprocess.run([sys.executable, os.path.join(REPO, "export.py"), "--format=tfhub-bert", f"--model={start}",
                           f"--out={folder}"], cwd=REPO, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"export.py --format=tfhub-bert failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    return folder


def official_pause(bench: Bench, folder: str, job: Dict[str, Any]) -> Dict[str, Any]:
    """Runs (or reuses) the official trainer on `job` (bench/pause_official_train.py) in `folder`."""
    done = read_json(os.path.join(folder, "done.json"))
    if done is not None:
        return done
    shutil.rmtree(folder, ignore_errors=True)  # an interrupted run starts over
    os.makedirs(folder)
    job_path = os.path.join(folder, "job.json")
    write_json(job_path, job)
    env = {**os.environ, "TF_USE_LEGACY_KERAS": "1", "PYTHONPATH": REPO}
    with Stopwatch(bench.max_load) as watch:
        proc = subprocess.run([sys.executable, "-m", "bench.pause_official_train",
                               f"--code={os.path.abspath(FLAGS.pause_code)}", f"--job={job_path}", f"--out={folder}"],
                              env=env, cwd=REPO, capture_output=True, text=True)
    with open(os.path.join(folder, "log.txt"), "w") as f:
        f.write(proc.stdout[-200_000:] + "\n" + proc.stderr[-200_000:])
    if proc.returncode != 0:
        raise RuntimeError(f"the official trainer failed (exit {proc.returncode}) on {job_path}:\n"
                           f"{proc.stderr[-4000:]}")
    result = read_json(os.path.join(folder, "result.json"))
    record = {**watch.record(), "fit_seconds": result["seconds"], "losses": result["losses"],
              "argv": result["argv"], "patches": result["patches"], "embedder": result["embedder"],
              "versions": {"tensorflow": result["tensorflow"], "tf_keras": result["tf_keras"]}, "job": job}
    write_json(os.path.join(folder, "done.json"), record)
    return record


def run_pause_end_to_end(bench: Bench, seeds: Sequence[int]) -> List[Row]:
    """PAUSE trained end to end by the official code and by the toolkit, from the same start and the
    same labelled split: the toolkit with the original's behaviour (`PAUSE_ORIGINAL_FLAGS`), and with
    its own defaults, each against the official runs."""
    from common.data.fingerprint import fingerprint_rows  # noqa: F401  (the same fingerprint as the run's)
    from common.training.registry import build_config
    from pause_tf import method as pause_method
    from pause_tf.pu_data import pu_split

    epochs, per_epoch, batch = FLAGS.pause_epochs, FLAGS.pause_steps_per_epoch, FLAGS.batch_size
    length, percent = FLAGS.pause_max_seq_len, FLAGS.pause_labels
    base = dict(model=bench.start, train_data=PAUSE_TRAIN_DATA, pos_sample_prec=percent, prior=PAUSE_PRIOR,
                batch_size=batch, max_seq_len=length, train_epochs=epochs, train_steps_per_epoch=per_epoch,
                train_lr=PAUSE_LR, end_lr=PAUSE_END_LR, warmup_fraction=PAUSE_WARMUP, weight_decay=0.0,
                clip_norm=0.0)
    original = {**base, **PAUSE_ORIGINAL_FLAGS}
    key = settings_key("pause", {**base, "score": "own length"})
    root = os.path.join(bench.work_dir, key)
    hub = export_tfhub_start(bench.start, os.path.join(root, "start_tfhub"))
    flag_text = " ".join(f"--{k}={v}" for k, v in PAUSE_ORIGINAL_FLAGS.items())
    common_flags = (f"--pos_sample_prec={percent:g} --prior=0.3333 --batch_size={batch} --max_seq_len={length} "
                    f"--train_epochs={epochs} --train_steps_per_epoch={per_epoch} --train_lr={PAUSE_LR:g} "
                    f"--end_lr={PAUSE_END_LR:g} --warmup_fraction={PAUSE_WARMUP:g}")
    rows = {
        "pause": Row("pause", "PAUSE, the original's behaviour", {**original, "model": bench.start_name},
                     [{"key": "pause", "title": f"PAUSE {percent:g} % labels, toolkit with `{flag_text}`"}]),
        "pause_defaults": Row("pause_defaults", "PAUSE, the toolkit's defaults", {**base, "model": bench.start_name},
                              [{"key": "pause_defaults", "title": f"PAUSE {percent:g} % labels, toolkit defaults"}]),
    }
    for seed in seeds:
        folder = os.path.join(root, f"seed{seed}")
        done_original = bench.toolkit(os.path.join(folder, "toolkit_original"), "pause", {**original, "seed": seed})
        config = build_config("pause", {**original, "seed": seed, "data_path": bench.data_path})
        pairs, _ = pause_method._pairs(config)
        if pairs.fingerprint() != done_original["data"]["fingerprint"]:
            raise RuntimeError(f"pause seed {seed}: the pairs read here are not those the toolkit's run read "
                               "(fingerprints differ); the official side would train on other data.")
        labels = pu_split(pairs.labels, percent, seed)
        records = write_official_records(os.path.join(folder, "records"), pairs, labels,
                                         config.options.label_names)
        job = dict(hub=hub, records=records, seed=seed, train_epochs=epochs, train_steps_per_epoch=per_epoch,
                   batch_size=batch, max_seq_len=length, train_lr=PAUSE_LR, prior=PAUSE_PRIOR,
                   pos_sample_prec=f"{percent:g}")
        official = official_pause(bench, os.path.join(folder, REFERENCE), job)
        done_defaults = bench.toolkit(os.path.join(folder, "toolkit_defaults"), "pause", {**base, "seed": seed})
        official_scores = score_function(os.path.join(folder, REFERENCE),
                                         official_embedder(os.path.join(folder, REFERENCE, official["embedder"])))
        for name, done, side in (("pause", done_original, "toolkit_original"),
                                 ("pause_defaults", done_defaults, "toolkit_defaults")):
            row = rows[name]
            model_dir = os.path.join(folder, side, done["model_dir"])
            # Each model as it is published: the original's behaviour embeds at its padded length.
            row.put("scores", name, seed, TOOLKIT, bench.score_encoder(os.path.join(folder, side), model_dir, None,
                                                                             own_length=True))
            row.put("scores", name, seed, REFERENCE, official_scores)
            row.timings[str(seed)] = {TOOLKIT: timing(done), REFERENCE: timing(official)}
            row.put("losses", name, seed, TOOLKIT,
                    loss_summary(step_losses(os.path.join(folder, side, done["log_dir"]))))
    patches = official.get("patches", []) if seeds else []
    notes = [
        f"Official: `train_nli.py {' '.join(a for a in official['argv'] if not a.startswith(RUN_FOLDER_FLAGS))}` "
        "(`--log_dir`, `--model_dir` in the run's folder; its `run()`, under tf-keras) on TFRecords written "
        "from the toolkit run's labelled split; patched only where it cannot run offline: "
        + "; ".join(patches) + "." if seeds else "Official: not run.",
        f"Toolkit: `train.py --method=pause --model=<start> --train_data={','.join(PAUSE_TRAIN_DATA)} {common_flags}`"
        " and, for the original's behaviour, " + f"`{flag_text}`.",
        f"{epochs * per_epoch} steps of {batch} pairs ({epochs} epochs of {per_epoch}) on each side; the final "
        "model of each is scored (the official code keeps no best step). The loss table shows the toolkit's losses "
        "only: the official TensorBoard logs a running mean per epoch, and the sides draw different batches.",
    ] + [f"By construction: {d}" for d in PAUSE_SIDE_DIFFERENCES]
    rows["pause"].notes = notes
    rows["pause_defaults"].notes = [
        "The same official runs; the toolkit with its own defaults instead: masked mean pooling over each batch "
        "padded to its longest pair, the decay starting at the end of warm-up, the PU weight annealed over the whole "
        "run (it reaches 1 at the last step; the original's restarts every epoch and stays below "
        f"{(1 / epochs) ** 3:.3g}), and the PU term on every batch. The difference is what these make."]
    return list(rows.values())


def run_pause(bench: Bench) -> Dict[str, Any]:
    """bench/pause_official.py in a subprocess with tf-keras as tf.keras (as the official TF 2.4 code expects)."""
    if not FLAGS.pause_code:
        return {}
    folder = os.path.join(bench.work_dir, "pause_official")
    done = read_json(os.path.join(folder, "result.json"))
    if done is not None:
        return done
    os.makedirs(folder, exist_ok=True)
    out = os.path.join(folder, "result.json")
    env = {**os.environ, "TF_USE_LEGACY_KERAS": "1", "PYTHONPATH": REPO}
    proc = subprocess.run([sys.executable, "-m", "bench.pause_official", f"--code={os.path.abspath(FLAGS.pause_code)}",
                           f"--out={out}"], env=env, cwd=REPO, capture_output=True, text=True)
    result = read_json(out)
    if result is None:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        return {"error": f"exit {proc.returncode}: {tail[0]}"}
    return result


# === Main ===

# The header bullets of a page that say where and how its numbers were measured (`pages.header`).
PROVENANCE = ("Command", "Commit", "Machine", "Written", "Load", "Start", "Versions")


def carried_rows(results_dir: str, running: Sequence[str]) -> Dict[str, Any]:
    """The rows of the page already in `results_dir` that this invocation does not run, each with where
    it was measured (`carried`: the old page's header bullets), so that a run of some rows keeps the
    others; `pause` (the one-step check) too. Empty when there is no page."""
    old = read_json(os.path.join(results_dir, "results.json"))
    readme = os.path.join(results_dir, "README.md")
    if old is None or not os.path.isfile(readme):
        return {}
    provenance = {}
    with open(readme, encoding="utf-8") as f:
        for line in f:
            for name in PROVENANCE:
                prefix = f"- {name}: "
                if line.startswith(prefix) and name not in provenance:
                    provenance[name] = line[len(prefix):].strip()
    # A row name and what it writes: the pause row writes the end-to-end rows and the one-step check.
    produced = set(running) | ({"pause_defaults"} if "pause" in running else set())
    kept = {name: {**row, "carried": row.get("carried") or provenance}
            for name, row in old.get("rows", {}).items() if name not in produced}
    out: Dict[str, Any] = {"rows": kept}
    if "pause" not in running and old.get("pause"):
        out["pause"] = {**old["pause"], "carried": old["pause"].get("carried") or provenance}
    return out


def resolve_start(value: str, data_path: str) -> Tuple[str, str]:
    """(folder, name for the page) of --start."""
    if value == "minilm":
        from common.models.sources.names import minilm_dir

        return minilm_dir(), "minilm (sentence-transformers/all-MiniLM-L6-v2)"
    folder = value or os.path.join(data_path, DEFAULT_START)
    if not os.path.isfile(os.path.join(folder, "config.json")):
        raise FileNotFoundError(f"--start={value or folder}: no Hugging Face BERT folder there (config.json, "
                                "model.safetensors, vocab.txt); give one, or minilm.")
    return os.path.abspath(folder), (value or f"<data_path>/{DEFAULT_START}")


def main(argv):
    unknown = sorted(set(FLAGS.rows) - set(ROWS))
    if unknown:
        raise UserError(f"--rows: unknown {unknown}; expected some of {', '.join(ROWS)}.")
    try:
        seeds = [int(s) for s in FLAGS.seeds]
    except ValueError:
        raise UserError(f"--seeds={','.join(FLAGS.seeds)}: expected integers separated by commas.") from None
    load = harness.Load()
    if load.load1 > FLAGS.max_load and not FLAGS.allow_loaded:
        raise UserError(f"Refusing to benchmark: the 1-minute load average is {load.load1:.2f}, above --max_load="
                        f"{FLAGS.max_load}; the wall times would be skewed. Run on an idle machine, or pass "
                        "--allow_loaded for a run whose loaded timings are marked LOADED.")
    threads = FLAGS.threads or os.cpu_count() or 1
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(threads)
    start, start_name = resolve_start(FLAGS.start, FLAGS.data_path)
    work_dir = os.path.join(FLAGS.work_dir, os.path.basename(start.rstrip("/")))
    bench = Bench(work_dir, FLAGS.data_path, start, start_name, FLAGS.reference_python, threads, FLAGS.max_load,
                  FLAGS.score_max_seq_len)
    began = time.time()
    record: Dict[str, Any] = {
        "settings": {"start": start_name, "rows": ",".join(FLAGS.rows), "seeds": ",".join(map(str, seeds)),
                     "steps": FLAGS.steps, "batch_size": FLAGS.batch_size,
                     "lr": FLAGS.lr if FLAGS.lr is not None else "each method's default",
                     "max_seq_len": FLAGS.max_seq_len,
                     "dropout": FLAGS.dropout if FLAGS.dropout is not None else "the start's own",
                     "score_max_seq_len": FLAGS.score_max_seq_len,
                     "pause": (f"{FLAGS.pause_epochs} epochs of {FLAGS.pause_steps_per_epoch} steps, "
                               f"{FLAGS.pause_labels:g} % labels, max_seq_len {FLAGS.pause_max_seq_len}"
                               if "pause" in FLAGS.rows and FLAGS.pause_code else "not run"),
                     "threads": threads, "max_load": FLAGS.max_load},
        "rows": {}}
    record["start"] = bench.score_encoder(os.path.join(work_dir, "start"), start, "mean")
    carried = carried_rows(FLAGS.results_dir, FLAGS.rows)
    record["rows"].update(carried.get("rows", {}))
    if carried.get("pause"):
        record["pause"] = carried["pause"]
    for name in FLAGS.rows:
        if name == "simcse_unsup":
            record["rows"][name] = run_simcse(bench, "unsup", seeds).as_record()
        elif name == "simcse_sup":
            record["rows"][name] = run_simcse(bench, "sup", seeds).as_record()
        elif name == "trans_encoder":
            record["rows"][name] = run_trans_encoder(bench, seeds).as_record()
        elif name == "pause":
            record["pause"] = run_pause(bench)
            if FLAGS.pause_code:
                for row in run_pause_end_to_end(bench, seeds):
                    record["rows"][row.name] = row.as_record()
    import keras

    record["versions"] = {"tensorflow": tf.__version__, "keras": keras.__version__,
                          **{k: v for k, v in bench.worker_versions.items() if k != "torch_threads"}}
    text = write_results(record, FLAGS.results_dir, load)
    print(text)
    print(f"wall time this invocation: {time.time() - began:.0f} s")


if __name__ == "__main__":
    define_flags()
    cli.run(main)
