"""The reproduction ladder: every paper's claim, from one raw pretrained BERT, with floors and verdicts.

    .venv/bin/python -m bench.reproduce --data_path=../shared/data --start=artifacts/starts/bert_mini_books

1. start: `--start` names a pretrained BERT (a Hugging Face folder, e.g. one `bench/hf_pretrain.py`
   wrote on a GPU machine, or a train.py artifact); without it the `pretrain` stage pretrains a fresh
   `--encoder` here with `--method=mlm` on the Gutenberg books (whole books held out);
2. floors: what needs no pretraining at all, the same architecture randomly initialised (mean and
   CLS pooling) and TF-IDF cosine; raw: the start scored with mean pooling and with CLS;
3. simcse: unsup SimCSE on sentences cut from the books; sup SimCSE on SentEval's SNLI dev+test
   triples (the only NLI offline: recorded as trained on SNLI); each publishes its best STS-B dev
   step, and with `--simcse_lrs` each mode's learning rate is the one whose seed-0 run scored best on
   STS-B dev (the SimCSE paper chose its learning rate on STS-B dev);
4. pause: PAUSE at each `--percentages` of labels, and supervised-only training (cross-entropy
   on exactly the same labelled pairs, same steps, all-labelled batches, no PU term); PAUSE at 5 %
   also with the original per-epoch annealing;
5. declutr: contrastive + MLM, contrastive only, MLM only, on the books, each evaluating STS-B dev
   every `--declutr_eval_every` steps and publishing its best step, as the SimCSE rows do;
6. trans_encoder: from the SimCSE unsup model of the same seed, `--te_cycles` cycles of
   `--te_cross_epochs` cross-encoder and `--te_bi_epochs` bi-encoder epochs over the unlabelled pairs,
   selecting within each phase every `--te_eval_every` steps and choosing its best cycle on STS-B dev.

Every trained row runs for each of `--seeds`. Every model is scored the way the papers score: the
seven-set STS average and STS-B dev of the test_sts.py scorer, on untruncated sentences (up to
`--score_max_seq_len`, whatever length the run trained at), and the SentEval `fast` transfer average
on `--senteval_tasks` for seed 0. Each claim gets a verdict by the rules of `bench.verdicts`.

Each run lives in its own artifacts root under `--artifacts_dir/runs/<name>/`: a finished run is
reused, an interrupted one resumed from its last checkpoint, so a killed benchmark continues where it
stopped. Scores are cached in `--artifacts_dir/scores.json`. The results page (table, claim lines,
plots, command, commit, machine, the start's pretraining against the unigram floor) is written to
`--results_dir`. Settings are chosen on STS-B dev (and held-out MLM loss) only. Not part of the test suite.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any, Dict, List, Optional, Tuple

from absl import flags, logging

import numpy as np

from common import cli

from bench import pages, verdicts
from bench.harness import busy_seconds, machine_busy_ticks, other_cores, process_ticks
from common.errors import UserError

FLAGS = flags.FLAGS


def define_flags() -> None:
    """The ladder's flags, defined when it runs, not at import (see bench/harness.py)."""
    flags.DEFINE_string("data_path", "data", "Data root (downstream/, documents/gutenberg/).")
    flags.DEFINE_string("artifacts_dir", "artifacts/reproduce", "Where the ladder's runs and scores are written.")
    flags.DEFINE_string("results_dir", "docs/benchmarks/reproduce", "Where the results page (README.md), its plots and "
                        "results.json are written.")
    flags.DEFINE_list("stages", ["pretrain", "floors", "raw", "simcse", "pause", "declutr", "trans_encoder"],
                      "Stages to run (pretrain only without --start).")
    flags.DEFINE_string("start", "", "A pretrained BERT to start every rung from (Hugging Face folder or train.py "
                        "artifact); empty: pretrain --encoder here.")
    flags.DEFINE_string("encoder", "random_bert_tiny", "Fresh BERT to pretrain without --start (random_bert_tiny, "
                        "random_bert_mini, ...).")
    flags.DEFINE_integer("pretrain_steps", 1000,
                         "Masked-LM steps (split into --pretrain_epochs; held-out loss each epoch).")
    flags.DEFINE_integer("pretrain_epochs", 4, "Masked-LM epochs (the held-out books are scored at each epoch end).")
    flags.DEFINE_integer("pretrain_batch", 64, "Masked-LM windows (of 128 tokens) per step.")
    flags.DEFINE_float("pretrain_lr", 5e-4, "Masked-LM peak learning rate (without --pilot_lrs).")
    flags.DEFINE_list("pilot_lrs", [], "Peak learning rates to try in short masked-LM pilots before pretraining; the "
                      "one with the lowest held-out loss pretrains (empty: --pretrain_lr).")
    flags.DEFINE_integer("pilot_steps", 500, "Steps of each pilot (one epoch, warm-up and decay to its end).")
    flags.DEFINE_float("finetune_lr", 1e-4, "Peak learning rate of every rung trained from the start.")
    flags.DEFINE_integer("score_max_seq_len", 512, "Tokens every model is scored at (the papers do not truncate; "
                         "shorter sentences are not padded to it).")
    flags.DEFINE_integer("simcse_steps", 500, "SimCSE steps (unsup: 64 sentences; sup: 64 triples).")
    flags.DEFINE_list("simcse_modes", ["unsup", "sup"], "SimCSE rows to train (unsup, sup).")
    flags.DEFINE_list("simcse_lrs", [], "SimCSE peak learning rates to try, per mode, on seed 0: the one whose "
                      "published step scored best on STS-B dev trains every seed, as the SimCSE paper chose its "
                      "learning rate on STS-B dev (empty: --finetune_lr).")
    flags.DEFINE_integer("simcse_eval_every", 125, "SimCSE: steps between STS-B dev evaluations; the best is kept "
                         "(the official trainer's 125).")
    flags.DEFINE_integer("pause_steps", 2000, "PAUSE and supervised-only steps of 64 pairs.")
    flags.DEFINE_integer("pause_eval_every", 250, "PAUSE and supervised-only: steps between STS-B dev evaluations; "
                         "the best is kept (--publish_best), as for the SimCSE rows.")
    flags.DEFINE_list("percentages", ["1", "5", "10", "30", "100"], "Label percentages for PAUSE and supervised-only.")
    flags.DEFINE_list("seeds", ["0", "1", "2"], "Seeds of every trained row (the verdicts need 3).")
    flags.DEFINE_integer("declutr_steps", 2000, "DeCLUTR steps of 8 documents.", lower_bound=1)
    flags.DEFINE_integer("declutr_eval_every", 250, "DeCLUTR: steps between STS-B dev evaluations; the best is "
                         "kept (--publish_best), as for the SimCSE rows.", lower_bound=1)
    flags.DEFINE_list("declutr_variants", list(DECLUTR_VARIANTS), "DeCLUTR rows to train, in this order, for each "
                      "seed: contrastive_mlm (the paper's objective), contrastive_only, mlm_only (each term alone).")
    flags.DEFINE_integer("te_cycles", 2, "Trans-Encoder cycles.")
    flags.DEFINE_integer("te_cross_epochs", 1, "Trans-Encoder: cross-encoder epochs per cycle (the official "
                         "protocol: 1).", lower_bound=1)
    flags.DEFINE_integer("te_bi_epochs", 3, "Trans-Encoder: bi-encoder epochs per cycle (the official protocol: "
                         "10; one pass over the pairs was still rising on STS-B dev here).", lower_bound=1)
    flags.DEFINE_integer("te_steps", 0, "Trans-Encoder: caps each epoch of every phase at this many steps; 0: "
                         "each epoch one pass over the pairs (the cross-encoder's counts both orders).",
                         lower_bound=0)
    flags.DEFINE_integer("te_eval_every", 100, "Trans-Encoder: steps between STS-B dev evaluations within a phase; "
                         "each phase keeps its best (Trans-Encoder's --evaluation_steps, --best_in_phase).",
                         lower_bound=1)
    flags.DEFINE_list("senteval_tasks", ["MR", "CR", "SUBJ", "MPQA"], "SentEval tasks (fast setting).")
    flags.DEFINE_list("senteval_seeds", ["0"], "Seeds whose models get SentEval too.")
    flags.DEFINE_list("senteval_percentages", ["5", "100"], "Label percentages whose PAUSE and supervised-only models "
                      "get SentEval (for --senteval_seeds).")
    flags.DEFINE_integer("probe_steps", 0, "Time this many training steps of each planned row that has no score "
                         "yet (seed 0, its own settings), so that the page says the CPU time it would need; 0: "
                         "none.", lower_bound=0)
    flags.DEFINE_bool("relink_claims", False, "Only rewrite the claim lines of --results_dir's page from its "
                      "results.json, with the training-parity rows now recorded (docs/benchmarks/parity); train "
                      "and score nothing. For a page whose runs are no longer on disk.")


NLI_OFFLINE = ("senteval:dev", "senteval:test")
PERCENT_ROWS = ("pause", "supervised")
# The PAUSE stage's rows at each label percentage: (kind, settings beyond the shared ones).
PAUSE_FAMILY = (("pause", {}), ("supervised", dict(annealing="off", labeled_batch_fraction=1.0)))
# Its labelled ablations at 5 % of the labels: (row, settings). Supervised-only differs from PAUSE in two ways, its
# batches (all labelled, against about a third) and the PU term; PAUSE's batches without the PU term separate them.
# DeCLUTR's rows: --declutr_variants name -> (row, settings). The paper's objective, and each of its two terms alone.
DECLUTR_VARIANTS = {"contrastive_mlm": ("declutr contrastive + MLM", {}),
                    "contrastive_only": ("declutr contrastive only", dict(mlm=False)),
                    "mlm_only": ("declutr MLM only", dict(contrastive=False))}
PAUSE_ABLATIONS = (("pause 5% without the PU term", dict(annealing="off")),
                   ("pause 5% PU weight 1 from the start", dict(anneal_power=0.0)),
                   ("pause 5% per-epoch annealing", dict(annealing="per_epoch")))


def step_seconds(log_dir: str) -> Dict[str, float]:
    """Median seconds per training step of each phase of a run ("" for a run without phases), from the wall
    times of its logged losses (`--log_every=1`); the first logged step, which compiles, is left out."""
    import numpy as np

    from common.training.curves import read_scalars

    found = {}
    for phase, tags in read_scalars(log_dir).items():
        loss = tags.get("train/loss")
        if loss is None or len(loss.steps) < 4:
            continue
        steps, times = loss.steps[1:], loss.wall_times[1:]
        gaps = [(times[k + 1] - times[k]) / (steps[k + 1] - steps[k]) for k in range(len(steps) - 1)]
        found[phase] = round(float(np.median(gaps)), 4)
    return found


# The scalars a run's record keeps for the page's curves, so a page rewritten on another machine (without the
# run's event files) still draws them: {name in the record: TensorBoard tag}.
CURVE_TAGS = {"stsb_dev": "eval/stsb_dev_spearman", "loss": "train/loss", "accuracy": "train/accuracy",
              "pu_weight": "train/pu_weight"}


def run_curves(run_root: str, tags: Dict[str, str] = None) -> Dict[str, List[List[float]]]:
    """{name: [[step, value], ...]} of `tags` (default `CURVE_TAGS`) found in a run's event files (every piece of
    a resumed run)."""
    found = {}
    for name, tag in (tags or CURVE_TAGS).items():
        steps, values = _scalars(run_root, tag)
        if steps:
            found[name] = [[int(s), round(float(v), 5)] for s, v in zip(steps, values)]
    return found


def phase_curves(run_root: str, tag: str = CURVE_TAGS["stsb_dev"]) -> Dict[str, List[List[float]]]:
    """{phase: [[step within the phase, value], ...]} of a phased run's `tag` (a Trans-Encoder run's STS-B dev
    within each phase), from its event files: every piece of a resumed run, a step logged again taking its later
    value. Empty without event files here (a run trained on another machine)."""
    import glob

    from common.training.curves import read_scalars

    found: Dict[str, Dict[int, float]] = {}
    for log_dir in sorted(glob.glob(os.path.join(run_root, "log", "*"))):
        for phase, tags in read_scalars(log_dir).items():
            if phase and tag in tags:
                found.setdefault(phase, {}).update(zip(tags[tag].steps, tags[tag].values))
    return {phase: [[int(s), round(float(v), 5)] for s, v in sorted(points.items())]
            for phase, points in found.items()}


# What a row's scoring writes (`Ladder.score`, `score_cross`); dropped when its model is not the one scored.
SCORE_KEYS = ("sts_avg", "stsb_dev", "sts", "senteval_avg", "senteval", "senteval_seconds")


def stamp_scored_models(scores: Dict[str, Any]) -> None:
    """Gives each scored entry written before entries named their model (`model_id`) the one it scored: its own
    run's ID, or for a read-out row ("simcse unsup (mean pooling) seed 0") the ID of the row it reads out
    ("simcse unsup seed 0"). Entries of untrained models (floors, the start) stay unnamed."""
    for name, entry in scores.items():
        if not isinstance(entry, dict) or "sts_avg" not in entry or "model_id" in entry:
            continue
        source = entry
        if not entry.get("run_id") and " (" in name and " seed " in name:
            source = scores.get(f"{name.split(' (')[0]} seed {name.rsplit(' seed ', 1)[1]}") or {}
        if source.get("run_id"):
            entry["model_id"] = source["run_id"]


class Ladder:
    """Runs (cached in their own artifacts roots) and their scores (cached in scores.json).

    Several ladder processes may share one root (e.g. `--stages=pause` beside
    `--stages=simcse,declutr` once the pretraining is done): scores are merged
    into scores.json under a file lock, each process writing only its own rows.
    A benchmark built on it (bench/your_task.py) names its own module and curves.
    """

    # The benchmark whose invocations the scores' _meta records, and the scalars each run record keeps.
    module = "bench.reproduce"
    curve_tags = CURVE_TAGS

    def __init__(self, root: str, data_path: str, carry_from: str = None):
        self.root, self.data_path = root, data_path
        os.makedirs(root, exist_ok=True)
        self.scores_path = os.path.join(root, "scores.json")
        if carry_from and not os.path.exists(self.scores_path) and os.path.exists(carry_from):
            # A fresh artifacts root (a new machine) starts from the scores its page already holds, so a
            # ladder spread over several machines trains only the rows that page does not have yet.
            with open(carry_from) as f:
                carried = json.load(f)["scores"]
            with open(self.scores_path, "w") as f:
                json.dump(carried, f, indent=1)
            logging.info("Started %s from the %d entries of %s.", self.scores_path, len(carried), carry_from)
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
        if not os.path.exists(self.scores_path):
            return {}
        with open(self.scores_path, encoding="utf-8") as f:
            scores = json.load(f)
        stamp_scored_models(scores)
        return scores

    def finished(self, row: str, run: str) -> bool:
        """Whether the scores entry `row` holds the scores of the run `run` (so neither needs its model again)."""
        entry = self.scores.get(row, {})
        return entry.get("run") == run and "sts_avg" in entry

    def read_out(self, row: str, source: str, run: str) -> bool:
        """Whether the scores entry `row` holds the scores of the model that the row `source` trained as the run
        `run` ("simcse unsup (mean pooling) seed 0" read out of "simcse unsup seed 0"), so none is needed again."""
        entry, trained = self.scores.get(row, {}), self.scores.get(source, {})
        return (trained.get("run") == run and trained.get("run_id") is not None and "sts_avg" in entry
                and entry.get("model_id") == trained["run_id"])

    def models(self, name: str) -> List[str]:
        """The published models of the run `name` here, oldest first (none where this machine never trained it or
        no longer holds it)."""
        models = os.path.join(self.root, "runs", name, "model")
        return sorted(d for d in os.listdir(models) if not d.startswith(".")) if os.path.isdir(models) else []

    def run(self, name: str, method: str, settings: Dict[str, Any], evaluator=None, row: str = None,
            after_step=None) -> str:
        """Trains (or reuses, or resumes) the run `name`; returns its model directory.

        Its training record goes to the scores entry `row` (default `name`): a row whose run was trained
        under another name (a learning-rate pilot that became seed 0) gets that run's record. `after_step`
        goes to `train` (tests interrupt a run with it).
        """
        from common.training.registry import build_config
        from common.training.runs import train

        row = row or name
        root = os.path.join(self.root, "runs", name)
        models = os.path.join(root, "model")
        done = self.models(name)
        if done:
            trained = self.scores.get(name, {})
            if row != name and "run_id" in trained and self.scores.get(row, {}).get("run") != name:
                self._record(row, name, {k: trained[k] for k in ("train_seconds", "metrics", "run_id", "settings")
                                         if k in trained})
            return os.path.join(models, done[-1])
        ckpt = os.path.join(root, "ckpt")
        started = sorted(os.listdir(ckpt)) if os.path.isdir(ckpt) else []
        config = build_config(method, {"checkpoint_every": 100, "log_every": 25, "eval_each_epoch": False,
                                       **settings, "data_path": self.data_path, "artifacts_dir": root})
        if started:
            logging.info("Resuming %s (%s).", name, started[-1])
            config = config.replace(resume=started[-1])
        began = time.time()
        result = train(config, evaluator, after_step=after_step)
        # A resumed run's seconds are those of its last piece; config.json has the total.
        record = dict(train_seconds=round(time.time() - began, 1), metrics=result["metrics"],
                      run_id=result["run_id"], settings={k: v for k, v in settings.items() if k != "model"},
                      curves=run_curves(root, self.curve_tags))
        for key in {name, row}:
            self._record(key, name, record)
        return result["model_dir"]

    def _record(self, key: str, run: str, record: Dict[str, Any]) -> None:
        """Gives the scores entry `key` the training record of the run `run`. A row whose scores belonged to
        another run (a sweep retrained it under a new name) starts over, so stale scores are not reused."""
        entry = self.scores.get(key, {})
        if key != run and entry.get("run") != run:
            entry = {}
        earlier = entry.get("run_id")
        if earlier and record.get("run_id") and record["run_id"] != earlier:
            # The same run trained again (its model was not on this machine): the scores of the earlier model,
            # in this row and in the rows read out of it, do not describe the new one.
            for name in [n for n, e in self.scores.items() if isinstance(e, dict) and e.get("model_id") == earlier]:
                self.scores[name] = {k: v for k, v in self.scores[name].items() if k not in SCORE_KEYS}
                self.touched.add(name)  # written with `key` below
            entry = self.scores.get(key, {})
        self.scores[key] = dict(entry, **record, run=run)
        self._save(key)

    def score(self, name: str, model_dir: str, pooling: str = None, senteval: bool = True,
              encoder_settings: Dict[str, Any] = None) -> Dict[str, Any]:
        """STS (seven-set average, STS-B dev) and, if `senteval`, the SentEval fast average of a model, cached.

        Every model is scored on untruncated sentences (`--score_max_seq_len`), as the papers' evaluations
        do, whatever length it trained at. `encoder_settings` go to its EncoderConfig (a floor's seed).
        """
        entry = self._entry_of(name, model_dir)
        if "sts_avg" in entry and (not senteval or not FLAGS.senteval_tasks or "senteval_avg" in entry):
            return entry
        from common.loading.embedding import embed_sentences
        from common.models.encoder import EncoderConfig, build_encoder

        encoder = build_encoder(EncoderConfig(spec=model_dir, pooling=pooling, max_seq_len=FLAGS.score_max_seq_len,
                                              **(encoder_settings or {})))
        fn = encoder.embedding_function()
        return self._score_embedder(name, lambda s: embed_sentences(fn, s, 128, progress=False), senteval)

    def _entry_of(self, name: str, model_dir: str) -> Dict[str, Any]:
        """The scores entry `name` for the model in `model_dir` (named by its folder, a run's ID): scores of
        another model (a run trained again) are dropped, so they are not reused."""
        entry = self.scores.setdefault(name, {})
        model_id = os.path.basename(os.path.normpath(model_dir))
        if entry.get("model_id") not in (None, model_id):
            entry = self.scores[name] = {k: v for k, v in entry.items() if k not in SCORE_KEYS}
        entry["model_id"] = model_id
        return entry

    def _score_embedder(self, name: str, embed, senteval: bool) -> Dict[str, Any]:
        from common.evaluation.senteval import evaluate_senteval, get_config
        from common.evaluation.sts import evaluate_sts

        entry = self.scores.setdefault(name, {})
        if "sts_avg" not in entry:
            sts = evaluate_sts(embed, self.data_path)
            entry.update(sts_avg=sts["avg"], stsb_dev=sts["stsb"]["dev"], sts=sts)
        if senteval and FLAGS.senteval_tasks:
            se = evaluate_senteval(lambda s, desc: embed(s), self.data_path, FLAGS.senteval_tasks, get_config("fast"),
                                   model_name=name)
            entry.update(senteval_avg=se["averages"]["downstream"]["test"],
                         senteval={t: r for t, r in se["tasks"].items()}, senteval_seconds=se["seconds"])
        self._save(name)
        logging.info("%s: STS avg %.2f, STS-B dev %.2f, SentEval %s", name, entry["sts_avg"], entry["stsb_dev"],
                     entry.get("senteval_avg"))
        return entry

    def score_tfidf(self, name: str) -> Dict[str, Any]:
        """TF-IDF cosine (scikit-learn's TfidfVectorizer, fitted on the sentences of each set it scores)."""
        entry = self.scores.setdefault(name, {})
        if "sts_avg" in entry:
            return entry
        from common.evaluation.sts import evaluate_sts_pairs

        sts = evaluate_sts_pairs(tfidf_cosines, self.data_path)
        entry.update(sts_avg=sts["avg"], stsb_dev=sts["stsb"]["dev"], sts=sts, fixed=True)
        self._save(name)
        return entry

    def score_cross(self, name: str, model_dir: str) -> Dict[str, Any]:
        """STS of a Trans-Encoder run's cross-encoder (test_sts.py --mode=cross), cached."""
        entry = self._entry_of(name, model_dir)
        if "sts_avg" in entry:
            return entry
        from common.loading.resolve import resolve_cross_model
        from common.evaluation.sts import evaluate_sts_pairs

        scorer = resolve_cross_model(model_dir)
        sts = evaluate_sts_pairs(lambda a, b: scorer.score(a, b, 128, progress=False), self.data_path)
        entry.update(sts_avg=sts["avg"], stsb_dev=sts["stsb"]["dev"], sts=sts)
        self._save(name)
        logging.info("%s: STS avg %.2f, STS-B dev %.2f", name, entry["sts_avg"], entry["stsb_dev"])
        return entry

    def record_start(self, path: str) -> None:
        """Keeps what the start's own records say of its pretraining (bench/hf_pretrain.py's pretraining.json)."""
        record = os.path.join(path, "pretraining.json")
        entry = {"path": path}
        if os.path.exists(record):
            with open(record) as f:
                pre = json.load(f)
            run = pre["run"]
            entry.update({k: pre.get(k) for k in ("size", "precision", "batch_size", "window", "training_windows",
                                                  "training_tokens", "pretraining_dropout", "saved_dropout",
                                                  "warmup_fraction", "weight_decay", "mask_rate", "unigram",
                                                  "chosen_lr", "device", "torch", "transformers")})
            entry.update(heldout_titles=pre.get("heldout_titles"), steps=run["steps"], epochs=run["epochs"],
                         seconds=run["seconds"], tokens_per_second=run["tokens_per_second"], evals=run["evals"],
                         pilots=[{"lr": p["lr"], "epochs": p["epochs"], "heldout_loss": p["evals"][-1]["loss"]}
                                 for p in pre.get("pilots", [])])
        self.scores["_start"] = entry
        self._save("_start")

    def pilots(self, settings: Dict[str, Any], lrs: List[float], steps: int, evaluator=None) -> float:
        """Short masked-LM pilots, one per peak learning rate; returns the one with the lowest held-out loss.

        The choice uses the held-out books' masked-LM loss only (never an STS score); each pilot's
        STS-B dev (from `evaluator`, if given) is recorded beside it for the page.
        """
        found = []
        for lr in lrs:
            name = f"pilot lr {float(lr):g}"
            model_dir = self.run(name, "mlm", dict(settings, train_epochs=1, train_steps_per_epoch=steps,
                                                   train_lr=float(lr)), evaluator)
            with open(os.path.join(model_dir, "config.json")) as f:
                metrics = json.load(f).get("metrics", {})
            found.append(dict(lr=float(lr), steps=steps, heldout_loss=metrics["heldout_loss"],
                              heldout_accuracy=metrics.get("heldout_accuracy"),
                              stsb_dev=metrics.get("stsb_dev_spearman")))
        chosen = min(found, key=lambda p: p["heldout_loss"])["lr"]
        self.scores["_pilots"] = dict(pilots=found, chosen_lr=chosen)
        self._save("_pilots")
        logging.info("Pilots (held-out masked-LM loss): %s; pretraining at %g.",
                     ", ".join(f"{p['lr']:g}: {p['heldout_loss']:.3f}" for p in found), chosen)
        return chosen

    def choose_on_dev(self, family: str, lrs: List[float], train) -> float:
        """Trains `train(lr)` (seed 0) at each learning rate; returns the one whose published step scored best on
        STS-B dev (the run's own best-on-dev selection), and records the sweep under `_lr_sweeps` for the page."""
        found = []
        for lr in lrs:
            with open(os.path.join(train(lr), "config.json")) as f:
                selection = json.load(f).get("selection") or {}
            if selection.get("metric") != "stsb_dev_spearman" or selection.get("score") is None:
                raise ValueError(f"{family} at learning rate {lr:g}: the run recorded no STS-B dev selection "
                                 f"({selection}); a learning-rate sweep needs best-on-dev runs.")
            found.append(dict(lr=lr, stsb_dev=selection["score"], step=selection["step"]))
        chosen = max(found, key=lambda p: p["stsb_dev"])["lr"]
        self.scores.setdefault("_lr_sweeps", {})[family] = dict(tried=found, chosen_lr=chosen)
        self._save("_lr_sweeps")
        logging.info("%s learning rates (STS-B dev of the published step): %s; training every seed at %g.", family,
                     ", ".join(f"{p['lr']:g}: {p['stsb_dev']:.2f}" for p in found), chosen)
        return chosen

    def record_phases(self, name: str, model_dir: str) -> None:
        """A Trans-Encoder run's phase records (pseudo-label spread, STS-B dev) from its config.json."""
        with open(os.path.join(model_dir, "config.json")) as f:
            phases = json.load(f).get("phases", [])
        self.scores.setdefault(name, {})["phases"] = [
            {k: p.get(k) for k in ("phase", "cycle", "kind", "member", "label_mean", "label_std",
                                   "stsb_dev_spearman")} for p in phases]
        self._save(name)

    def record_phase_curves(self, name: str) -> bool:
        """Adds each phase's STS-B dev curve (`phase_curves`, as `stsb_dev_curve`) to the phase records of the
        Trans-Encoder row `name`, read from its run's event files when they are here and a record lacks it, so a
        page rewritten elsewhere still shows them. Returns whether it added them."""
        entry = self.scores.get(name) or {}
        phases = entry.get("phases") or []
        if not phases or all(p.get("stsb_dev_curve") for p in phases):
            return False
        curves = phase_curves(os.path.join(self.root, "runs", entry.get("run", name)))
        if not all(curves.get(p["phase"]) for p in phases):
            return False
        for p in phases:
            p["stsb_dev_curve"] = curves[p["phase"]]
        self._save(name)
        return True

    def _invocation(self, now: float) -> Dict[str, Any]:
        """This invocation's record so far: its interval, the highest load seen, the CPU others used."""
        self.max_load = max(self.max_load, os.getloadavg()[0])
        invocation = dict(start=self.began, seconds=round(now - self.began, 1), max_load1=round(self.max_load, 2),
                          command=pages.command(self.module))
        busy = machine_busy_ticks()
        if busy is not None and self.cpu_start[1] is not None:
            invocation["other_cores"] = other_cores(self.cpu_start, (now, busy, process_ticks()))
        return invocation

    def _write(self, update) -> Dict[str, Any]:
        """Merges into scores.json under the file lock: `update(merged)` changes what was read, which is written."""
        import fcntl

        with open(self.scores_path + ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            merged = self._load()
            update(merged)
            tmp = self.scores_path + f".tmp{os.getpid()}"
            with open(tmp, "w") as f:
                json.dump(merged, f, indent=1)
            os.replace(tmp, self.scores_path)
        return merged

    def _save(self, name: str) -> None:
        def update(merged):
            self.touched.add(name)
            merged.update({k: self.scores[k] for k in self.touched})
            meta = merged.setdefault("_meta", {})
            meta["updated"] = time.time()
            meta.setdefault("invocations", {})[self.invocation] = self._invocation(meta["updated"])

        self.scores = self._write(update)

    def probe(self, name: str, method: str, settings: Dict[str, Any], steps: int) -> Dict[str, float]:
        """Seconds per training step of `name`'s settings, over `steps` steps of a throw-away run (cached in
        scores.json under `_probes`); for the page's estimate of a row not run yet. {phase: seconds}."""
        from common.training.registry import build_config
        from common.training.runs import train

        cached = self.scores.get("_probes", {}).get(name)
        if cached and cached.get("steps") == steps:
            return cached["seconds_per_step"]
        root = os.path.join(self.root, "probes", name)
        if os.path.isdir(root):
            import shutil

            shutil.rmtree(root)  # a probe killed midway starts over: it is short
        config = build_config(method, {**settings, "checkpoint_every": 10 ** 6, "log_every": 1,
                                       "eval_each_epoch": False, "train_epochs": 1, "train_steps_per_epoch": steps,
                                       "data_path": self.data_path, "artifacts_dir": root})
        result = train(config)
        found = step_seconds(os.path.join(root, "log", result["run_id"]))
        self.scores.setdefault("_probes", {})[name] = dict(steps=steps, seconds_per_step=found)
        self._save("_probes")
        return found

    def keep_time(self, every: float = 300.0) -> None:
        """Records this invocation's interval every `every` seconds from a daemon thread, so one killed in a
        long run (a pretraining saves no result for hours) still counts the time it ran. It writes only its own
        invocation record, read from and merged into the file, never this process's scores."""
        import threading

        tick = threading.Event()

        def beat():
            while not tick.wait(every):
                self._write(lambda merged: merged.setdefault("_meta", {}).setdefault("invocations", {}).update(
                    {self.invocation: self._invocation(time.time())}))

        threading.Thread(target=beat, name="ladder-time", daemon=True).start()


def tfidf_cosines(first, second):
    """Cosine of TF-IDF vectors (unigrams, lowercased; idf from the pairs' own sentences) per pair."""
    import numpy as np
    from sklearn.feature_extraction.text import TfidfVectorizer

    vectors = TfidfVectorizer().fit(list(first) + list(second))
    a, b = vectors.transform(first), vectors.transform(second)  # rows are L2-normalised
    return np.asarray(a.multiply(b).sum(axis=1)).ravel()


def start_architecture(start: str) -> str:
    """The spec of a randomly initialised copy of the start's architecture (the floor rows)."""
    from common.models.sources.names import FRESH_BERTS, canonical_spec
    from common.models.sources.artifact import is_artifact_dir

    spec = canonical_spec(start)  # a run's config.json may name it by an old spelling
    if spec in FRESH_BERTS:
        return spec
    if is_artifact_dir(start):
        with open(os.path.join(start, "config.json")) as f:
            return start_architecture(json.load(f)["encoder"]["spec"])
    config = os.path.join(start, "config.json")
    if not os.path.exists(config):
        raise UserError(f"--start={start}: expected a Hugging Face BERT folder (config.json, model.safetensors, "
                         "vocab.txt) or a train.py artifact; no config.json there.")
    return config


def learning_rates(flag: str, values: List[str]) -> List[float]:
    """A list flag of learning rates as floats; anything but positive numbers is a user error."""
    try:
        rates = [float(v) for v in values]
    except ValueError:
        rates = []
    if len(rates) != len(values) or not all(r > 0 for r in rates):
        raise UserError(f"--{flag}={','.join(values)}: expected positive learning rates separated by commas "
                        f"(e.g. --{flag}=3e-5,1e-4,3e-4).")
    return rates


def declutr_variants(values: List[str]) -> List[str]:
    """The --declutr_variants list, checked against DECLUTR_VARIANTS; an unknown or repeated name is a user error."""
    unknown = [v for v in values if v not in DECLUTR_VARIANTS]
    if unknown or len(set(values)) != len(values) or not values:
        raise UserError(f"--declutr_variants={','.join(values)}: expected some of {','.join(DECLUTR_VARIANTS)}, "
                        "each once, in the order to train them.")
    return values


def simcse_run(mode: str, seed: int, steps: int, lr: float = None) -> str:
    """The name of the SimCSE `mode` run at seed `seed`: it carries its budget (`steps`), so a run of another
    budget (a page carried from an earlier ladder) is trained again, not reused; a learning-rate sweep's runs
    carry their rate instead."""
    return f"simcse {mode} lr {lr:g} seed {seed}" if lr is not None else f"simcse {mode} {steps} steps seed {seed}"


def te_budget(cycles: int, cross_epochs: int, bi_epochs: int, steps: int) -> str:
    """A Trans-Encoder run's budget, as its name carries it: a run of another budget is trained again, not
    reused, and the page leaves out rows of another budget. One epoch of each kind capped at `steps` keeps the
    name such runs always had."""
    if (cross_epochs, bi_epochs) == (1, 1) and steps:
        return f"{cycles} cycles of {steps} steps"
    epochs = (f"{cycles} cycles, {cross_epochs} cross-encoder and {bi_epochs} bi-encoder "
              f"epoch{'s' if bi_epochs > 1 else ''}")
    return f"{epochs} of at most {steps} steps" if steps else epochs


def te_run(budget: str, seed: int) -> str:
    """The name of the Trans-Encoder run of `budget` (`te_budget`) at seed `seed`."""
    return f"trans_encoder {budget} seed {seed}"


def budget_of_te() -> str:
    """This invocation's Trans-Encoder budget (`te_budget` of the --te_* flags)."""
    return te_budget(FLAGS.te_cycles, FLAGS.te_cross_epochs, FLAGS.te_bi_epochs, FLAGS.te_steps)


def te_settings(lr: float) -> Dict[str, Any]:
    """The Trans-Encoder settings of this invocation's budget, both kinds of phase at learning rate `lr`."""
    return dict(cycles=FLAGS.te_cycles, cross_epochs=FLAGS.te_cross_epochs, train_epochs=FLAGS.te_bi_epochs,
                train_steps_per_epoch=FLAGS.te_steps, train_lr=lr, cross_lr=lr)


def te_phase_steps(settings: Dict[str, Any], data_path: str) -> Dict[str, int]:
    """{"cross": steps, "bi": steps}: what one cycle's phases of the Trans-Encoder `settings` train, from the
    number of pairs its `--pairs` hold (the method's own phase loop)."""
    from common.training.registry import build_config
    from trans_encoder_tf.method import pairs_of, phase_loop

    config = build_config("trans_encoder", {**settings, "data_path": data_path})
    n_pairs = len(pairs_of(config)[0])
    return {kind: phase_loop(config, kind, n_pairs).total_steps for kind in ("cross", "bi")}


def declutr_rows(variants: List[str], seed: int, steps: int) -> List[tuple]:
    """(row, run, settings) of each DeCLUTR variant named in `variants`, in that order, at seed `seed`. The run's
    name carries its budget (`steps`), so a run of another budget is trained again, not reused."""
    return [(f"{row} seed {seed}", f"{row} {steps} steps seed {seed}", extra)
            for row, extra in (DECLUTR_VARIANTS[v] for v in variants)]


def main(argv):
    if FLAGS.relink_claims:
        print(relink_claims(FLAGS.results_dir, pages.command("bench.reproduce")))
        return
    pilot_lrs = learning_rates("pilot_lrs", FLAGS.pilot_lrs)
    variants = declutr_variants(FLAGS.declutr_variants)
    simcse_lrs = learning_rates("simcse_lrs", FLAGS.simcse_lrs)
    if FLAGS.start and not os.path.isdir(FLAGS.start):  # before the ladder makes its artifacts directory
        raise FileNotFoundError(f"--start={FLAGS.start}: no such directory; give a pretrained BERT folder "
                                "(e.g. one bench/hf_pretrain.py wrote) or leave --start empty to pretrain here.")
    from common.training import registry

    ladder = Ladder(FLAGS.artifacts_dir, FLAGS.data_path, carry_from=os.path.join(FLAGS.results_dir, "results.json"))
    ladder.keep_time()
    stages = set(FLAGS.stages)
    began = time.time()
    if FLAGS.start:
        raw = os.path.abspath(FLAGS.start)
        ladder.record_start(FLAGS.start)  # as given: the results page names no path of this machine
    else:
        # STS-B dev at each epoch end beside the held-out loss (the curve on the page); it chooses nothing.
        from common.evaluation.evaluators import StsbDevEvaluator

        watch = StsbDevEvaluator(FLAGS.data_path, progress=False)
        epochs = FLAGS.pretrain_epochs
        base = dict(model=FLAGS.encoder, batch_size=FLAGS.pretrain_batch, eval_each_epoch=True, checkpoint_every=50,
                    dropout=0.0)
        lr = (ladder.pilots(base, pilot_lrs, FLAGS.pilot_steps, watch) if pilot_lrs
              else FLAGS.pretrain_lr)
        raw = ladder.run("pretrain", "mlm", dict(base, train_epochs=epochs, train_lr=lr,
                                                 train_steps_per_epoch=FLAGS.pretrain_steps // epochs), watch)
    lr = FLAGS.finetune_lr
    if "floors" in stages:
        fresh = start_architecture(raw)
        ladder.score("floor: random init (mean)", fresh, pooling="mean", senteval=False, encoder_settings=dict(seed=0))
        ladder.score("floor: random init (CLS)", fresh, pooling="cls", senteval=False, encoder_settings=dict(seed=0))
        ladder.score_tfidf("floor: TF-IDF")
    if "raw" in stages:
        ladder.score("raw (mean)", raw, pooling="mean")
        ladder.score("raw (CLS)", raw, pooling="cls")
    seeds = [int(s) for s in FLAGS.seeds]
    senteval_seeds = {int(s) for s in FLAGS.senteval_seeds}
    sts_dev = None
    if {"simcse", "pause", "declutr", "trans_encoder"} & stages:
        from common.evaluation.evaluators import StsbDevEvaluator

        sts_dev = StsbDevEvaluator(FLAGS.data_path, progress=False)
    selection = dict(eval_every=FLAGS.simcse_eval_every, publish_best=True)
    simcse_settings = {"unsup": dict(model=raw, train_steps_per_epoch=FLAGS.simcse_steps, **selection),
                       "sup": dict(model=raw, simcse_mode="sup", train_data=NLI_OFFLINE, batch_size=64, train_epochs=1,
                                   train_steps_per_epoch=FLAGS.simcse_steps, **selection)}
    chosen_lrs: Dict[str, float] = {}

    def simcse(mode: str, seed: int, row: str = None, at: float = None) -> str:
        """SimCSE `mode` at seed `seed`, at `at` or the mode's learning rate (chosen on STS-B dev with --simcse_lrs)."""
        if at is None and mode not in chosen_lrs:
            chosen_lrs[mode] = (ladder.choose_on_dev(f"simcse {mode}", simcse_lrs, lambda x: simcse(mode, 0, at=x))
                                if simcse_lrs else lr)
        at = chosen_lrs[mode] if at is None else at
        name = simcse_run(mode, seed, FLAGS.simcse_steps, at if simcse_lrs else None)
        return ladder.run(name, "simcse", dict(simcse_settings[mode], train_lr=at, seed=seed), sts_dev, row=row)

    def unsup(seed: int, need_model: bool = False) -> Optional[str]:
        """Trains (unless its rows hold this budget's scores) and scores SimCSE unsup at `seed`, CLS and mean
        pooling; returns its model directory, or None when both rows were finished and `need_model` is false. A
        model needed again on a fresh machine is trained again, and both rows are scored from the new one."""
        row, mean = f"simcse unsup seed {seed}", f"simcse unsup (mean pooling) seed {seed}"
        run = None if simcse_lrs else simcse_run("unsup", seed, FLAGS.simcse_steps)
        if not need_model and run and ladder.finished(row, run) and ladder.read_out(mean, row, run):
            return None
        model = simcse("unsup", seed, row=row)
        ladder.score(row, model, senteval=seed in senteval_seeds)
        ladder.score(mean, model, pooling="mean", senteval=False)
        return model

    if "simcse" in stages:
        for seed in seeds:
            if "unsup" in FLAGS.simcse_modes:
                unsup(seed)
            name = f"simcse sup seed {seed}"
            if "sup" not in FLAGS.simcse_modes or (
                    not simcse_lrs and ladder.finished(name, simcse_run("sup", seed, FLAGS.simcse_steps))):
                continue
            ladder.score(name, simcse("sup", seed, row=name), senteval=seed in senteval_seeds)
    if "pause" in stages:
        # The paper's prior (1/3 for every class), not the toolkit's estimate from the labelled pairs. Every row
        # evaluates STS-B dev every --pause_eval_every steps and publishes its best step, as the SimCSE rows do.
        common = dict(model=raw, train_data=NLI_OFFLINE, batch_size=64, max_seq_len=64, train_epochs=4,
                      train_lr=lr, train_steps_per_epoch=FLAGS.pause_steps // 4, prior=1 / 3,
                      eval_every=FLAGS.pause_eval_every, publish_best=True)
        budget = f"{FLAGS.pause_steps} steps"

        def pause_row(row: str, seed: int, pct: str, extra: Dict[str, Any]) -> None:
            # The run's name carries its budget, so a row trained at another budget (a page carried from an
            # earlier ladder) is trained again rather than reused.
            run = f"{row.split(' seed ')[0]} {budget} seed {seed}"
            if ladder.finished(row, run):
                return
            model = ladder.run(run, "pause", dict(common, seed=seed, pos_sample_prec=float(pct), **extra),
                               sts_dev, row=row)
            ladder.score(row, model, senteval=seed in senteval_seeds and pct in FLAGS.senteval_percentages)

        # Percentage by percentage in the order given, so the first one's claims are judged over every seed
        # before the next percentage starts (a row takes about 20 minutes on 2 cores).
        for pct in FLAGS.percentages:
            for seed in seeds:
                for kind, extra in PAUSE_FAMILY:
                    pause_row(f"{kind} {pct}% seed {seed}", seed, pct, extra)
        # Ablations at 5 %, after the family: PAUSE's batches without its PU term, the PU term at full weight
        # from the first step (before the few labels are memorised), and the original's per-epoch annealing.
        for row, extra in PAUSE_ABLATIONS:
            for seed in seeds:
                pause_row(f"{row} seed {seed}", seed, "5", extra)
    if "declutr" in stages:
        spans = dict(model=raw, batch_size=8, max_seq_len=128, min_span_len=16, max_span_len=96, train_lr=lr,
                     train_steps_per_epoch=FLAGS.declutr_steps, eval_every=FLAGS.declutr_eval_every,
                     publish_best=True)
        for seed in seeds:
            for row, run, extra in declutr_rows(variants, seed, FLAGS.declutr_steps):
                if ladder.finished(row, run):
                    continue
                ladder.score(row, ladder.run(run, "declutr", dict(spans, seed=seed, **extra), sts_dev, row=row),
                             senteval=seed in senteval_seeds)
    if "trans_encoder" in stages and "trans_encoder" in registry.methods():
        for seed in seeds:
            # The official protocol selects the best cycle on STS-B dev (labels used for nothing else).
            name = f"trans_encoder seed {seed}"
            run = te_run(budget_of_te(), seed)
            if (ladder.read_out(f"trans_encoder bi seed {seed}", name, run)
                    and ladder.read_out(f"trans_encoder cross seed {seed}", name, run)):
                continue
            te = ladder.run(run, "trans_encoder",
                            dict(model=unsup(seed, need_model=True), seed=seed, **te_settings(lr),
                                 eval_each_epoch=True, evaluation_steps=FLAGS.te_eval_every, best_in_phase=True),
                            evaluator=sts_dev, row=name)
            ladder.record_phases(name, te)
            ladder.score(f"trans_encoder bi seed {seed}", te, senteval=False)
            ladder.score_cross(f"trans_encoder cross seed {seed}", te)
    if FLAGS.probe_steps:
        probe_missing_rows(ladder, raw, lr, seeds, dict(simcse_settings["sup"], train_lr=lr))
    # Each Trans-Encoder row's phase curves, read where its runs are (once; rows an earlier version recorded too).
    for name in [n for n in ladder.scores if n.startswith("trans_encoder seed ")]:
        ladder.record_phase_curves(name)
    results = write_results(ladder.scores, FLAGS.artifacts_dir, FLAGS.results_dir, pages.command("bench.reproduce"))
    print(results)
    print(f"wall time this invocation: {time.time() - began:.0f} s")


def probe_missing_rows(ladder: Ladder, raw: str, lr: float, seeds: List[int], simcse_sup: Dict[str, Any]) -> None:
    """For each family of planned rows some of which have no score yet, the seconds per step of its settings
    (`Ladder.probe`, seed 0) and what the rows would need, under `_not_run` for the page."""
    pause = dict(model=raw, train_data=NLI_OFFLINE, batch_size=64, max_seq_len=64, train_lr=lr, prior=1 / 3,
                 pos_sample_prec=5.0)
    pcts = FLAGS.percentages
    plan = {
        "simcse unsup": ("simcse", dict(model=raw, train_lr=lr), [f"simcse unsup seed {s}" for s in seeds],
                         FLAGS.simcse_steps),
        "simcse sup": ("simcse", {k: v for k, v in simcse_sup.items() if k not in ("eval_every", "publish_best")},
                       [f"simcse sup seed {s}" for s in seeds], FLAGS.simcse_steps),
        "pause": ("pause", pause, [f"pause {p}% seed {s}" for s in seeds for p in pcts], FLAGS.pause_steps),
        "supervised": ("pause", dict(pause, annealing="off", labeled_batch_fraction=1.0),
                       [f"supervised {p}% seed {s}" for s in seeds for p in pcts], FLAGS.pause_steps),
        "declutr": ("declutr", dict(model=raw, batch_size=8, max_seq_len=128, min_span_len=16, max_span_len=96,
                                    train_lr=lr),
                    [f"{v} seed {s}" for s in seeds for v, _ in DECLUTR_VARIANTS.values()], FLAGS.declutr_steps),
        "trans_encoder": ("trans_encoder", dict(model=raw, cycles=1, train_lr=lr, cross_lr=lr),
                          [f"trans_encoder seed {s}" for s in seeds], None),
    }
    not_run = {}
    for family, (method, settings, rows, steps) in plan.items():
        missing = [row for row in rows if not row_scored(ladder.scores, row, budget_of_te())]
        if not missing:
            continue
        per_step = ladder.probe(family, method, settings, FLAGS.probe_steps)
        if family == "trans_encoder":
            steps = te_phase_steps(dict(model=raw, **te_settings(lr)), ladder.data_path)
        # A Trans-Encoder cycle runs a cross-encoder phase and a bi-encoder phase, of `steps[kind]` each.
        cycles = FLAGS.te_cycles if family == "trans_encoder" else 1
        not_run[family] = dict(rows=missing, steps=steps, cycles=cycles, seconds_per_step=per_step,
                               probe_steps=FLAGS.probe_steps)
        if family == "trans_encoder":
            not_run[family]["budget"] = budget_of_te()
            # Each row starts from its seed's SimCSE unsup model: one this machine no longer holds (a fresh
            # machine keeps the page's scores, not its models) is trained again first.
            starts = []
            for row in missing:
                seed = int(row.rsplit(" ", 1)[1])
                start = te_start(seed)
                if not ladder.models(ladder.scores.get(start, {}).get("run")
                                     or simcse_run("unsup", seed, FLAGS.simcse_steps)):
                    starts.append(start)
            if starts:
                method_of_start, settings_of_start = plan["simcse unsup"][:2]
                not_run[family]["starts"] = dict(
                    rows=starts, steps=FLAGS.simcse_steps, cycles=1, probe_steps=FLAGS.probe_steps,
                    seconds_per_step=ladder.probe("simcse unsup", method_of_start, settings_of_start,
                                                  FLAGS.probe_steps))
        not_run[family]["seconds_per_row"] = round(row_seconds(not_run[family], steps), 1)
    ladder.scores["_not_run"] = not_run
    ladder._save("_not_run")


def row_scored(scores: Dict[str, Any], row: str, te_budget_words: Optional[str] = None) -> bool:
    """Whether the planned row `row` has its STS score (a Trans-Encoder row's is its bi-encoder's; with
    `te_budget_words`, only from a run of that budget, `te_budget`)."""
    if te_budget_words and row.startswith("trans_encoder seed "):
        seed = int(row.rsplit(" ", 1)[1])
        if scores.get(row, {}).get("run") != te_run(te_budget_words, seed):
            return False
    return "sts_avg" in scores.get(row.replace("trans_encoder seed", "trans_encoder bi seed"), {})


def pause_steps_of(entry: Dict[str, Any]) -> int:
    """The steps a PAUSE-family row trained (epochs x steps per epoch of its recorded settings; 0 if unrecorded,
    which counts as the current budget)."""
    settings = entry.get("settings") or {}
    return int(settings.get("train_epochs", 1) * settings.get("train_steps_per_epoch", 0))


def at_budget(scores: Dict[str, Any], steps: int, te_budget_words: Optional[str] = None):
    """(scores without the PAUSE-family rows trained at another number of steps than `steps`, [(row, its steps)]).

    A page carried from an earlier ladder may hold rows of an older budget; judging them beside rows of this
    one would compare models trained ten times less. With `te_budget_words` (`te_budget`), the Trans-Encoder rows
    of a run of another budget are left out too, and listed as (row, its run's name) after the PAUSE ones."""
    kept, other, other_te = {}, [], []
    te_rows = {}  # model ID of a Trans-Encoder run of another budget -> its run's name
    for name, entry in scores.items():
        if te_budget_words and isinstance(entry, dict) and name.startswith("trans_encoder seed ") and entry.get(
                "run") and entry["run"] != te_run(te_budget_words, int(name.rsplit(" ", 1)[1])):
            te_rows[entry.get("run_id")] = entry["run"]
    for name, entry in scores.items():
        if (isinstance(entry, dict) and name.startswith(PERCENT_ROWS) and "sts_avg" in entry
                and pause_steps_of(entry) not in (0, steps)):
            other.append((name, pause_steps_of(entry)))
            continue
        if isinstance(entry, dict) and name.startswith("trans_encoder ") and (
                entry.get("run_id") in te_rows or entry.get("model_id") in te_rows):
            if "sts_avg" in entry:
                other_te.append((name, te_rows[entry["model_id"]]))
            continue
        kept[name] = entry
    return kept, sorted(other) + sorted(other_te)


def te_start(seed: int) -> str:
    """The SimCSE unsup row whose model Trans-Encoder seed `seed` starts from."""
    return f"simcse unsup seed {seed}"


def run_seconds(entry: Dict[str, Any]) -> Optional[float]:
    """A trained row's training time: its run's total over every piece of a resumed run, STS-B dev evaluations
    during training included (the training loop's `seconds`), where its metrics record one; else the wall time of
    its last piece (`train_seconds`); None for an entry that trained nothing."""
    metrics = entry.get("metrics")
    total = metrics.get("seconds") if isinstance(metrics, dict) else None
    return float(total) if total is not None else entry.get("train_seconds")


def pause_estimate(scores: Dict[str, Any]) -> str:
    """What one row at this budget took here (the median training time of those trained: a run stopped or
    sharing the machine for a while counts as one, not in the mean), for the page."""
    seconds = [run_seconds(e) for name, e in scores.items() if isinstance(e, dict)
               and name.startswith(PERCENT_ROWS) and "sts_avg" in e and run_seconds(e) is not None]
    return f"(about {np.median(seconds) / 60:.0f} minutes each on this machine, as the rows above took)" if seconds \
        else ""


def row_seconds(entry: Dict[str, Any], steps) -> float:
    """Training seconds of one planned row of the probe `entry` at `steps`: an int for every phase, or
    {"cross": steps, "bi": steps} per Trans-Encoder cycle, each kind at its own phase's seconds per step."""
    per_step = entry["seconds_per_step"]
    if isinstance(steps, dict):
        per_cycle = sum(sec * steps["cross" if "_cross_" in phase else "bi"] for phase, sec in per_step.items())
    else:
        per_cycle = steps * sum(per_step.values())
    return entry["cycles"] * per_cycle


def _steps_words(steps) -> str:
    if isinstance(steps, dict):
        return f"{steps['cross']} cross-encoder and {steps['bi']} bi-encoder steps"
    return f"{steps} steps"


def trained_seconds(scores: Dict[str, Any], family: str, budget=None) -> List[float]:
    """The training times (`run_seconds`) of the rows of `family` already scored, one per run: rows named
    "<family> ... seed N", at `budget` where it is given (steps for a PAUSE or SimCSE family, `te_budget`'s
    words for Trans-Encoder; a row that records no steps counts as this budget)."""
    te_words = budget if family == "trans_encoder" else None
    found = {}
    for name, entry in scores.items():
        if not (isinstance(entry, dict) and name.startswith(family + " ") and name.rsplit(" ", 1)[-1].isdigit()
                and name.rsplit(" ", 2)[-2] == "seed" and run_seconds(entry) is not None):
            continue
        if not row_scored(scores, name, te_words):
            continue
        if isinstance(budget, int) and pause_steps_of(entry) not in (0, budget):
            continue
        found[entry.get("run_id") or name] = run_seconds(entry)
    return list(found.values())


def _starts_account(scores: Dict[str, Any], probe: Dict[str, Any], starts: List[str],
                    steps: Optional[int]) -> Tuple[str, float, float]:
    """(sentence, probe's seconds, seconds at the pace of trained rows) of a Trans-Encoder family's account on the
    SimCSE unsup models `starts` that its rows start from and this machine no longer holds (`probe`: their probe,
    as `probe_missing_rows` keeps it); the pace falls back to the probe's where no simcse unsup row is trained."""
    per = sum(probe["seconds_per_step"].values())
    seconds = row_seconds(probe, probe["steps"]) * len(starts)
    many = len(starts) > 1
    words = (f"{'Their SimCSE unsup starts' if many else 'Its SimCSE unsup start'} ({', '.join(starts)}) "
             f"{'are' if many else 'is'} not on this machine and {'are' if many else 'is'} trained again first: "
             f"{probe['steps']} steps at {per:.3g} s per step each, about {seconds / 3600:.1f} h")
    trained = trained_seconds(scores, "simcse unsup", steps or probe["steps"])
    measured = seconds
    if trained:
        median = float(np.median(trained))
        measured = median * len(starts)
        words += (f"; the {len(trained)} simcse unsup rows trained at this budget took a median of "
                  f"{median / 60:.0f} minutes each: about {measured / 3600:.1f} h")
    return words + ".", seconds, measured


def not_run_lines(scores: Dict[str, Any], budgets: Optional[Dict[str, Any]] = None) -> List[str]:
    """The page's account of the planned rows not run yet, with the training time they would need here: the
    rows of the last probe (`_not_run`) less those scored since. `budgets` ({family: steps}) are this
    invocation's: a row is accounted at its family's budget (the probe's seconds per step times it), not at the
    steps of a probe an earlier invocation ran; a PAUSE-family probe of another budget is left out (the page's
    own section lists those rows), and so is a Trans-Encoder probe of another budget (`budgets` gives it as
    `te_budget`'s words: its phases' steps depend on the pairs, known to the probe)."""
    budgets = budgets or {}
    found = {}
    for family, entry in scores.get("_not_run", {}).items():
        if family == "trans_encoder":
            if family in budgets and entry.get("budget") != budgets[family]:
                continue  # a probe of another budget: the rows are accounted once probed at this one
            steps = entry["steps"]
        else:
            steps = budgets.get(family, entry["steps"])
        if family in PERCENT_ROWS and entry["steps"] != steps:
            continue  # a probe of another budget: the page's own section lists these rows
        rows = [row for row in entry["rows"] if not row_scored(scores, row, budgets.get("trans_encoder"))]
        if rows:
            found[family] = dict(entry, rows=rows, steps=steps, seconds_per_row=row_seconds(entry, steps))
    if not found:
        return []
    lines = ["## Not run yet", "",
             "Rows the ladder plans that have no score yet, each with the training time it would need on this "
             "machine: its steps times the seconds per step measured over a short run of its settings (seed 0, "
             "the first step left out); STS-B dev evaluations during training and the scoring of each model come "
             "on top.", ""]
    total = measured_total = 0.0
    for family, entry in found.items():
        per = ", ".join(f"{phase or 'training'} {sec:.3g} s" for phase, sec in entry["seconds_per_step"].items())
        seconds = entry["seconds_per_row"] * len(entry["rows"])
        total += seconds
        cycles = f"{entry['cycles']} cycles of " if entry["cycles"] > 1 else ""
        line = (f"- {family}: {len(entry['rows'])} rows ({', '.join(entry['rows'])}), each {cycles}"
                f"{_steps_words(entry['steps'])} at {per} per step (measured over {entry['probe_steps']} steps): "
                f"about {seconds / 3600:.1f} h of training in all.")
        trained = trained_seconds(scores, family, budgets.get(family, entry.get("budget")))
        if trained:
            median = float(np.median(trained))
            measured_total += median * len(entry["rows"])
            took = (f"The row of this family already trained at this budget took {median / 60:.0f} minutes"
                    if len(trained) == 1 else f"The {len(trained)} rows of this family already trained at this "
                    f"budget took a median of {median / 60:.0f} minutes each")
            line += (f" {took}, evaluations during training included: about {median * len(entry['rows']) / 3600:.1f}"
                     f" h for these.")
        else:
            measured_total += seconds
        starts = [start for start in entry.get("starts", {}).get("rows", [])
                  if f"trans_encoder seed {start.rsplit(' ', 1)[1]}" in entry["rows"]]
        if starts:
            words, first, at_pace = _starts_account(scores, entry["starts"], starts, budgets.get("simcse unsup"))
            line += " " + words
            total += first
            measured_total += at_pace
        lines.append(line)
    lines += ["", f"In all: about {total / 3600:.1f} h of training on this machine"
              + (f"; about {measured_total / 3600:.1f} h at the time the rows already trained took."
                 if measured_total > total * 1.05 or measured_total < total * 0.95 else "."), ""]
    return lines


# === Results: table, claims, plots ===

# The paper's own effect size per label rate would stand beside each PAUSE line; its tables could not be read
# offline, so the page quotes the claim as the abstract states it instead of inventing numbers.
PAUSE_PAPER_CLAIM = ("The PAUSE paper's per-percentage STS tables were not available offline here, so no paper "
                     "effect size stands beside the PAUSE lines; its abstract claims that PAUSE \"achieves, and "
                     "sometimes surpasses, state-of-the-art results using only a small fraction of labeled sentence "
                     "pairs\" (Cao et al., EMNLP 2021), with released checkpoints at 1, 5, 10, 30, 50, 70 and 100 % "
                     "of the NLI labels.")


# The training-parity rows (`bench.parity`, docs/benchmarks/parity/) that speak for the implementation behind a
# claim, by the claim's first words: a claim that did not hold at this scale reads beside whether the method,
# trained here, ends where a reference trainer ends from the same start.
PARITY_OF_CLAIM = (("PAUSE", ("pause",)), ("SimCSE sup", ("simcse_sup", "simcse_unsup")),
                   ("SimCSE unsup", ("simcse_unsup",)), ("DeCLUTR", ("declutr",)),
                   ("Trans-Encoder", ("trans_encoder",)))
PARITY_PAGE = "../parity/README.md"  # from docs/benchmarks/<ladder>/README.md
PARITY_RESULTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                              "docs", "benchmarks", "parity", "results.json")


def _slug(title: str) -> str:
    """A heading's anchor as GitHub writes it."""
    kept = "".join(c for c in title.lower() if c.isalnum() or c in " -")
    return kept.replace(" ", "-")


def parity_note(claim: str, parity: Dict[str, Any], page: str) -> str:
    """What the parity page says of the implementation behind `claim` (empty when no row speaks for it).

    Args:
        claim: str. The claim's text.
        parity: dict. The parity benchmark's results.json (empty: not run).
        page: str. The parity page's path relative to the ladder page.
    """
    from bench.parity import METRICS, compare

    rows = next((rows for prefix, rows in PARITY_OF_CLAIM if claim.startswith(prefix)), ())
    start = os.path.basename(str(parity.get("settings", {}).get("start", ""))) or "one start on both sides"
    parts = []
    for key in rows:
        if key == "declutr":
            parts.append(f"no reference trainer exists ([DeCLUTR]({page}#declutr)): its loss and span sampler are "
                         "checked against NumPy and the official sampler")
        elif key == "pause":
            cases = (parity.get("pause") or {}).get("cases", [])
            if cases:
                equal = [c["name"] for c in cases if c["outcome"] == "EQUAL"]
                other = [f"{c['name']}: {c['outcome']}" for c in cases if c["outcome"] != "EQUAL"]
                parts.append(f"[PAUSE]({page}#pause): one step's loss and head gradients equal to the official "
                             f"code's on {', '.join(equal) or 'no batch'}"
                             + (f" ({'; '.join(other)}, see the row)" if other else ""))
        elif key in parity.get("rows", {}):
            record = parity["rows"][key]
            title, (metric, metric_title) = record["title"], METRICS[0]
            for row in record.get("page_rows", [{"key": key, "title": title}]):
                found = compare(record["scores"].get(row["key"], {}), metric)
                if found is not None:
                    parts.append(f"[{row['title']}]({page}#{_slug(title)}) from {start}: {metric_title} "
                                 f"{found.side('toolkit')} (toolkit) vs {found.side('reference')} (reference), "
                                 f"{found.outcome}")
    return f" Training parity: {'; '.join(parts)}." if parts else ""


def claim_lines(found: List[verdicts.Verdict], parity: Dict[str, Any], page: str) -> List[str]:
    return [v.line() + parity_note(v.claim, parity, page) for v in found]


def relink_claims(results_dir: str, command: str) -> str:
    """Rewrites the claim lines of the page in `results_dir` (README.md) from its results.json, each with its
    training-parity note; the rest of the page is left as written. Returns the new claim lines."""
    page, record = os.path.join(results_dir, "README.md"), os.path.join(results_dir, "results.json")
    if not (os.path.exists(page) and os.path.exists(record)):
        raise FileNotFoundError(f"--results_dir={results_dir}: expected README.md and results.json of a ladder page.")
    with open(record) as f:
        found = [verdicts.Verdict(c["claim"], c["outcome"], c["detail"]) for c in json.load(f)["claims"]]
    with open(page) as f:
        lines = f.read().split("\n")
    starts = [f"- {v.claim}: **" for v in found]
    at = [i for i, line in enumerate(lines) if any(line.startswith(p) for p in starts)]
    if len(at) != len(found):
        raise UserError(f"{page}: found {len(at)} of its {len(found)} claim lines; regenerate the page instead.")
    new = claim_lines(found, read_parity(), PARITY_PAGE)
    for i, line in zip(at, new):
        lines[i] = line
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    note = f"- Claim lines linked to training parity by `{command}`, {when}"
    header_end = lines.index("", next(i for i, line in enumerate(lines) if line.startswith("- Command:")))
    lines = [line for line in lines[:header_end] if not line.startswith("- Claim lines linked")] + [note] + \
        lines[header_end:]
    with open(page, "w") as f:
        f.write("\n".join(lines))
    return "\n".join(new)


def read_parity(path: str = None) -> Dict[str, Any]:
    """The parity benchmark's results.json (`path`, default PARITY_RESULTS), or {} where it has not been written."""
    path = path or PARITY_RESULTS
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        return json.load(f)


def _mean_std(values: List[float]) -> str:
    """Mean ± sample standard deviation (ddof 1, as the verdicts' standard error uses)."""
    import numpy as np

    return f"{np.mean(values):.2f} ± {np.std(values, ddof=1):.2f}" if len(values) > 1 else f"{values[0]:.2f}"


def _order(name: str):
    """The ladder's order: floors, raw, SimCSE, PAUSE and supervised-only by percentage, DeCLUTR, Trans-Encoder."""
    rungs = ("floor", "raw", "simcse", "pause", "supervised", "declutr", "trans_encoder")
    rung = next((i for i, r in enumerate(rungs) if name.startswith(r)), len(rungs))
    if rungs[rung] in ("pause", "supervised"):
        pct = name.split("%")[0].split()[-1]
        return (3, float(pct) if pct.replace(".", "", 1).isdigit() else 1e9, rung, name)
    return (rung, 0.0, 0, name)


def _groups(scores: Dict[str, Any]) -> Dict[str, List[Dict[str, Any]]]:
    groups: Dict[str, List[Dict[str, Any]]] = {}
    for name, entry in scores.items():
        if isinstance(entry, dict) and "sts_avg" in entry:
            groups.setdefault(name.split(" seed ")[0], []).append(entry)
    return dict(sorted(groups.items(), key=lambda item: _order(item[0])))


def _fixed(name: str) -> bool:
    """Rows of untrained models: the floors and the start (no seed noise)."""
    return name.startswith(("floor", "raw"))


def report(scores: Dict[str, Any]) -> str:
    """The results table (trained rows as mean ± sd over seeds)."""
    lines = ["| model | seeds | STS avg | STS-B dev | SentEval avg | train s |",
             "| --- | --- | --- | --- | --- | --- |"]
    # A row read out of a run that is no row of its own (a Trans-Encoder run's bi- and cross-encoder) takes
    # that run's training time; a read-out of another row (mean pooling of a SimCSE model) trained nothing.
    entries_of_runs = [e for e in scores.values() if isinstance(e, dict) and e.get("run_id")]
    rows = {e["run_id"] for e in entries_of_runs if "sts_avg" in e}
    runs = {e["run_id"]: e for e in entries_of_runs if e["run_id"] not in rows}

    def seconds_of(entry):
        own = run_seconds(entry)
        return own if own is not None or entry.get("model_id") not in runs else run_seconds(runs[entry["model_id"]])

    for name, entries in _groups(scores).items():
        cells = []
        for key in ("sts_avg", "stsb_dev", "senteval_avg"):
            values = [e[key] for e in entries if e.get(key) is not None]
            note = f" ({len(values)} seed)" if 0 < len(values) < len(entries) else ""
            cells.append(_mean_std(values) + note if values else "-")
        seconds = [t for t in map(seconds_of, entries) if t is not None]
        cells.append(f"{np.median(seconds):.0f}" if seconds else "-")
        seeds = "fixed" if _fixed(name) else str(len(entries))
        lines.append(f"| {name} | {seeds} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _row(groups, name: str, key: str = "sts_avg"):
    values = [e[key] for e in groups.get(name, []) if e.get(key) is not None]
    return verdicts.Row(name, values, fixed=_fixed(name)) if values else None


def collapsed_runs(scores: Dict[str, Any], runs_root: str) -> Dict[str, List[str]]:
    """Rule 6 (`bench.verdicts.collapsed`) over the SimCSE rows' runs: {row: [one line per collapsed seed]}.

    The final training loss and the batch come from each run's own config.json."""
    out: Dict[str, List[str]] = {}
    for name, entry in sorted(scores.items()):
        if not (isinstance(entry, dict) and name.startswith("simcse") and entry.get("run_id") and "sts_avg" in entry):
            continue
        path = os.path.join(runs_root, "runs", entry.get("run", name), "model", entry["run_id"], "config.json")
        if not os.path.exists(path):
            continue
        with open(path) as f:
            record = json.load(f)
        config = record["config"]
        candidates = config["run"]["batch_size"] * (2 if config["simcse"]["mode"] == "sup" else 1)
        found = verdicts.collapsed(record.get("metrics", {}).get("loss"), candidates)
        if found:
            out.setdefault(name.split(" seed ")[0], []).append(f"{name}: {found}")
    return out


def claims(scores: Dict[str, Any], percentages: List[str],
           collapsed: Dict[str, List[str]] = None) -> List[verdicts.Verdict]:
    """Each paper claim with its verdict (STS avg; rules in `bench.verdicts`); `collapsed` from `collapsed_runs`."""
    collapsed = collapsed or {}

    def unless_collapsed(verdict: verdicts.Verdict, rows: List[str]) -> verdicts.Verdict:
        found = [line for row in rows for line in collapsed.get(row, [])]
        if not found or verdict.outcome == verdicts.NOT_RUN:
            return verdict
        return verdicts.Verdict(verdict.claim, verdicts.NOT_TESTABLE,
                                f"{verdict.detail}; collapsed: {'; '.join(found)}")

    g = _groups(scores)
    r = lambda name: _row(g, name)  # noqa: E731
    out = []
    family = [row for row in (r(f"{k} {p}%") for k in ("pause", "supervised") for p in percentages) if row]
    parts = [verdicts.above(f"{p} %", r(f"pause {p}%"), r(f"supervised {p}%")) for p in percentages if float(p) <= 30]
    out.append(verdicts.all_of("PAUSE above supervised-only at every label percentage <= 30 %", parts))
    out.append(verdicts.above("PAUSE at 5 % at most 2 points below supervised-only at 100 %", r("pause 5%"),
                              r("supervised 100%"), margin=-2.0, family=family))
    raw = max((row for row in (r("raw (mean)"), r("raw (CLS)")) if row), key=lambda row: row.mean, default=None)
    # Two floors, two questions: has pretraining put anything in (random init), and is that worth more than
    # counting shared words (TF-IDF)?
    random_init = max((row for row in (r("floor: random init (mean)"), r("floor: random init (CLS)")) if row),
                      key=lambda row: row.mean, default=None)
    out.append(verdicts.above("The pretrained start above the same architecture randomly initialised", raw,
                              random_init))
    out.append(verdicts.above("The pretrained start above TF-IDF cosine", raw, r("floor: TF-IDF")))
    out.append(unless_collapsed(verdicts.above("SimCSE unsup at least 5 points above the raw model", r("simcse unsup"),
                                               raw, margin=5.0), ["simcse unsup"]))
    out.append(unless_collapsed(verdicts.above("SimCSE sup above SimCSE unsup", r("simcse sup"), r("simcse unsup")),
                                ["simcse sup", "simcse unsup"]))
    both, con, mlm = r("declutr contrastive + MLM"), r("declutr contrastive only"), r("declutr MLM only")
    out.append(verdicts.above("DeCLUTR (contrastive + MLM) above the raw model", both, raw))
    out.append(verdicts.all_of("DeCLUTR contrastive + MLM above contrastive only and above MLM only",
                               [verdicts.above("vs contrastive only", both, con),
                                verdicts.above("vs MLM only", both, mlm)]))
    degenerate = [f"{name}: {d}" for name, e in scores.items()
                  if isinstance(e, dict) and name.startswith("trans_encoder")
                  for d in verdicts.degenerate_cycles(e.get("phases", []))]
    for kind in ("bi", "cross"):
        claim = f"Trans-Encoder {kind}-encoder above its SimCSE start"
        pairs = []  # each seed with the SimCSE model it started from (rule 7)
        for name, entry in sorted(scores.items()):
            start = scores.get(te_start(int(name.rsplit(" ", 1)[1]))) if name.startswith(
                f"trans_encoder {kind} seed ") else None
            if isinstance(start, dict) and "sts_avg" in start and "sts_avg" in entry:
                pairs.append((entry["sts_avg"], start["sts_avg"]))
        verdict = verdicts.above_start(claim, r(f"trans_encoder {kind}"), r("simcse unsup"), pairs)
        if degenerate and verdict.outcome != verdicts.NOT_RUN:
            verdict = verdicts.Verdict(claim, verdicts.NOT_TESTABLE,
                                       f"{verdict.detail}; degenerate: {'; '.join(degenerate)}")
        out.append(unless_collapsed(verdict, ["simcse unsup"]))
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


def plot(scores: Dict[str, Any], runs_root: str, out_dir: str, percentages: List[str]) -> List[str]:
    """sts_vs_labels.png (PAUSE vs supervised-only), training_curves.png and pretraining.png in `out_dir`."""
    import numpy as np

    from common.figures import new_figure, write_png

    written = []
    g = _groups(scores)
    pcts = [p for p in percentages if g.get(f"pause {p}%") and g.get(f"supervised {p}%")]
    if pcts:
        fig = new_figure((6, 4), dpi=120)
        ax = fig.subplots()
        for kind, marker in (("pause", "o"), ("supervised", "s")):
            values = [[e["sts_avg"] for e in g[f"{kind} {p}%"]] for p in pcts]
            ax.errorbar([float(p) for p in pcts], [np.mean(v) for v in values],
                        yerr=[np.std(v, ddof=1) if len(v) > 1 else 0.0 for v in values],
                        marker=marker, capsize=3, label="PAUSE" if kind == "pause" else "supervised-only")
        for name, style in (("simcse unsup", ":"), ("raw (mean)", "--"), ("floor: random init (mean)", "-.")):
            if g.get(name):
                ax.axhline(np.mean([e["sts_avg"] for e in g[name]]), linestyle=style, color="grey", label=name)
        ax.set_xscale("log")
        ax.set_xticks([float(p) for p in pcts], [f"{p}%" for p in pcts])
        ax.set_xlabel("labelled NLI pairs kept")
        ax.set_ylabel("STS avg (Spearman x100, 7 sets)")
        ax.set_title("PAUSE vs supervised-only from the pretrained start (mean ± sd over seeds)", fontsize=9)
        ax.legend(fontsize=7)
        fig.tight_layout()
        path = os.path.join(out_dir, "sts_vs_labels.png")
        write_png(fig, path)
        written.append(path)
    for path in (plot_pause_curves(scores, out_dir, percentages), plot_selected_curves(scores, out_dir)):
        if path:
            written.append(path)
    start = scores.get("_start", {})
    if start.get("evals"):
        fig = new_figure((6, 3.5), dpi=120)
        ax = fig.subplots()
        epochs = [e["epoch"] for e in start["evals"]]
        ax.plot(epochs, [e["loss"] for e in start["evals"]], marker=".", label="held-out masked-LM loss")
        ax.axhline(start["unigram"]["loss"], linestyle="--", color="grey", label="unigram predictor, same masks")
        ax.set_xlabel("epoch of the books")
        ax.set_ylabel("cross-entropy (nats)")
        ax2 = ax.twinx()
        ax2.plot(epochs, [100 * e["accuracy"] for e in start["evals"]], color="tab:green", marker=".",
                 label="held-out accuracy (%)")
        ax2.axhline(100 * start["unigram"]["accuracy"], linestyle=":", color="tab:green")
        ax2.set_ylabel("accuracy (%)")
        ax.legend(fontsize=7, loc="center right")
        ax.set_title(f"Pretraining of the start ({start.get('size')}, {start.get('device')})", fontsize=9)
        fig.tight_layout()
        path = os.path.join(out_dir, "pretraining.png")
        write_png(fig, path)
        written.append(path)
    curves = [("pretrain", "train/loss", "masked-LM loss"),
              ("pretrain", "eval/heldout_loss", "held-out masked-LM loss"),
              ("pretrain", "eval/stsb_dev_spearman", "pretraining: STS-B dev (mean pooling)"),
              ("simcse unsup seed 0", "train/loss", "SimCSE unsup loss"),
              ("simcse unsup seed 0", "eval/stsb_dev_spearman", "SimCSE unsup STS-B dev"),
              ("simcse sup seed 0", "train/loss", "SimCSE sup loss"),
              ("pause 5% seed 0", "train/loss", "PAUSE 5 % loss"),
              ("supervised 5% seed 0", "train/loss", "supervised-only 5 % loss"),
              ("declutr contrastive + MLM seed 0", "train/loss", "DeCLUTR contrastive + MLM loss")]
    panels, absent = [], []
    recorded_as = {tag: name for name, tag in CURVE_TAGS.items()}
    for row, tag, label in curves:
        entry = scores.get(row, {})
        run_root = os.path.join(runs_root, "runs", entry.get("run", row))  # a row trained under another name
        steps, values = _scalars(run_root, tag) if os.path.isdir(run_root) else ([], [])
        recorded = None if len(steps) else _curve(entry, recorded_as.get(tag))
        if recorded is not None:  # its event files are on the machine that trained it; its record keeps the curve
            steps, values = recorded
        if len(steps):
            panels.append((label, steps, values))
        elif entry:
            absent.append(label)
    path = os.path.join(out_dir, "training_curves.png")
    if absent and os.path.exists(path):
        # A row this machine cannot draw (its event files are elsewhere and its record keeps no such curve):
        # the figure drawn where they were stays, rather than one that silently lacks its panel.
        logging.warning("Kept %s: the curves of %s are not here to redraw it.", path, ", ".join(absent))
        written.append(path)
    elif panels:
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
        write_png(fig, path)
        written.append(path)
    return written


def _arrays(points: List[List[float]]):
    """(steps, values) arrays of a recorded curve's [[step, value], ...]."""
    return np.asarray([p[0] for p in points]), np.asarray([p[1] for p in points])


def _curve(entry: Dict[str, Any], name: str):
    """(steps, values) of one of a run record's curves (`run_curves`), or None."""
    points = (entry.get("curves") or {}).get(name)
    return _arrays(points) if points else None


def pause_curve_rows(scores: Dict[str, Any], percentages: List[str]) -> Dict[str, List[Dict[str, Any]]]:
    """{group: the entries of its seeds that carry an STS-B dev curve}, for the PAUSE family and its ablations."""
    groups = {name: [e for e in entries if (e.get("curves") or {}).get("stsb_dev")]
              for name, entries in _groups(scores).items() if name.startswith(("pause", "supervised"))}
    return {name: entries for name, entries in groups.items() if entries}


def plot_pause_curves(scores: Dict[str, Any], out_dir: str, percentages: List[str]):
    """pause_curves.png: STS-B dev over training of PAUSE and supervised-only at each label percentage (each seed
    thin, their mean thick), and the training accuracy and PU weight of the 5 % rows; None without curves."""
    from common.figures import new_figure, write_png

    rows = pause_curve_rows(scores, percentages)
    pcts = [p for p in percentages if any(name.startswith((f"pause {p}%", f"supervised {p}%")) for name in rows)]
    if not pcts:
        return None
    fig = new_figure((4 * (len(pcts) + 1), 3.4), dpi=100)
    axes = fig.subplots(1, len(pcts) + 1, squeeze=False)[0]
    colours = {}
    for ax, pct in zip(axes, pcts):
        for name, entries in rows.items():
            if not name.startswith((f"pause {pct}%", f"supervised {pct}%")):
                continue
            colour = colours.setdefault(name.replace(f" {pct}%", ""), f"C{len(colours)}")
            curves = [_curve(e, "stsb_dev") for e in entries]
            for steps, values in curves:
                ax.plot(steps, values, color=colour, alpha=0.3, linewidth=0.8)
            common = min(len(c[0]) for c in curves)
            ax.plot(curves[0][0][:common], np.mean([c[1][:common] for c in curves], axis=0), color=colour,
                    marker=".", label=f"{name} ({len(curves)} seeds)")
        ax.set_title(f"STS-B dev, {pct} % of the labels", fontsize=9)
        ax.set_xlabel("step (64 pairs)", fontsize=8)
        ax.legend(fontsize=6)
    ax = axes[-1]
    for name, entries in rows.items():
        if not name.startswith(("pause 5%", "supervised 5%")):
            continue
        found = _curve(entries[0], "accuracy")
        if found is not None:
            ax.plot(*found, label=f"{name}: training accuracy (seed {entries[0]['settings'].get('seed', 0)})")
        weight = _curve(entries[0], "pu_weight")
        if weight is not None and name.startswith("pause"):
            ax.plot(*weight, linestyle="--", label=f"{name}: PU weight")
    ax.set_title("5 %: labelled-pair accuracy and PU weight", fontsize=9)
    ax.set_xlabel("step (64 pairs)", fontsize=8)
    ax.legend(fontsize=6)
    fig.tight_layout()
    path = os.path.join(out_dir, "pause_curves.png")
    write_png(fig, path)
    return path


def ablation_lines(scores: Dict[str, Any]) -> List[str]:
    """The PAUSE ablations at 5 %, each judged against supervised-only at 5 % and against PAUSE at 5 % by the
    claims' rules. They test the design, not a claim of the paper."""
    g = _groups(scores)
    r = lambda name: _row(g, name)  # noqa: E731
    lines = []
    for row, _ in PAUSE_ABLATIONS:
        if not g.get(row):
            continue
        for other in ("supervised 5%", "pause 5%"):
            lines.append(verdicts.above(f"{row} above {other}", r(row), r(other)).line())
    return ["Ablations (labelled rows, not defaults):", "", *lines] if lines else []


# The families other than PAUSE's whose rows evaluate STS-B dev while they train and publish their best step.
SELECTED_FAMILIES = ("simcse", "declutr")
# A curve whose best evaluation is its last, and that rose by more than this (STS-B dev points) since the one
# before, was still rising when its budget ran out.
STILL_RISING = 0.5


def selected_curve_rows(scores: Dict[str, Any]) -> Dict[str, List[Dict[str, Any]]]:
    """{group: the entries of its seeds that carry an STS-B dev curve}, for SimCSE's and DeCLUTR's rows."""
    groups = {name: [e for e in entries if (e.get("curves") or {}).get("stsb_dev")]
              for name, entries in _groups(scores).items() if name.startswith(SELECTED_FAMILIES)}
    return {name: entries for name, entries in groups.items() if entries}


def uncurved_rows(scores: Dict[str, Any]) -> List[str]:
    """The trained SimCSE and DeCLUTR rows (one per seed) without an STS-B dev curve: trained before the ladder
    evaluated while training, so the page cannot show that their budget let them peak."""
    return [name for name, entry in scores.items()
            if isinstance(entry, dict) and name.startswith(SELECTED_FAMILIES) and " seed " in name
            and "sts_avg" in entry and entry.get("run") and not (entry.get("curves") or {}).get("stsb_dev")]


def uncurved_line(scores: Dict[str, Any]) -> List[str]:
    """The page's line naming the `uncurved_rows`, grouped by row ([] when every trained row has its curve)."""
    groups: Dict[str, List[str]] = {}
    for name in uncurved_rows(scores):
        row, seed = name.split(" seed ")
        groups.setdefault(row, []).append(seed)
    if not groups:
        return []
    named = "; ".join(f"{row} seed{'s' if len(seeds) > 1 else ''} {', '.join(seeds)}" for row, seeds in
                      sorted(groups.items(), key=lambda item: _order(item[0])))
    return [f"Rows with no curve yet (trained before the ladder evaluated STS-B dev while training; their budget "
            f"is not shown until trained again, which reproduces them): {named}.", ""]


def curve_shape(steps, values, start: Optional[float] = None) -> str:
    """Where a dev curve's best point lies: "peaked" before the last evaluation (at its first one: the peak may
    lie before it), a "plateau" at the last one (within `STILL_RISING` of the evaluation before), or "still
    rising" (the budget was too short to tell). `start`, the start's STS-B dev in the curve's own read-out, says
    of a curve best at its first evaluation whether it rose from the start there: then its peak lies between
    the start and the second evaluation."""
    i = int(np.argmax(values))
    if i == 0 and len(values) > 1:
        shape = f"peaked at {int(steps[0])}, its first evaluation"  # the peak may lie before it
        if start is not None:
            shape += f", {'above' if values[0] > start else 'not above'} the start's {start:.2f}"
        return shape
    if i < len(values) - 1:
        return f"peaked at {int(steps[i])}"
    if len(values) > 1 and values[-1] - values[-2] <= STILL_RISING:
        return "plateau"
    return "still rising"


def selected_curve_table(scores: Dict[str, Any]) -> List[str]:
    """Per SimCSE or DeCLUTR row: its seeds' best steps, STS-B dev at the best and at the last evaluation, and
    each seed's curve shape (`curve_shape`), which says whether the row's budget let its curve peak."""
    rows = selected_curve_rows(scores)
    if not rows:
        return []
    start = _start_dev(scores)
    return ["| row | seeds | best steps | STS-B dev at best | at the last step | curve, per seed |",
            "| --- | --- | --- | --- | --- | --- |",
            *(_curve_row(name, [_curve(e, "stsb_dev") for e in entries],
                         start if name.startswith(MEAN_POOLED_ROWS) else None) for name, entries in rows.items())]


# The trained rows whose STS-B dev is read out as the start's (raw (mean)) is: DeCLUTR's, mean-pooled.
MEAN_POOLED_ROWS = ("declutr",)


def _curve_row(name: str, curves, start: Optional[float] = None) -> str:
    """A table row of the seeds' dev curves ((steps, values) each): the best steps, STS-B dev at the best and at
    the last evaluation (mean ± sd), and each seed's `curve_shape` (from `start`, the start's STS-B dev in the
    same read-out, when given)."""
    return (f"| {name} | {len(curves)} | {', '.join(str(int(t[int(np.argmax(v))])) for t, v in curves)} | "
            f"{_mean_std([float(np.max(v)) for _, v in curves])} | {_mean_std([float(v[-1]) for _, v in curves])} | "
            f"{'; '.join(curve_shape(t, v, start) for t, v in curves)} |")


def _start_dev(scores: Dict[str, Any]) -> Optional[float]:
    """The start's STS-B dev (raw (mean)), or None without the raw row."""
    return (scores.get("raw (mean)") or {}).get("stsb_dev")


def start_dev_clause(scores: Dict[str, Any]) -> str:
    """", beside the start's STS-B dev (raw (mean), X)" for the curves' text, or "" without the raw row."""
    start = _start_dev(scores)
    return f", beside the start's STS-B dev (raw (mean), {start:.2f}, dashed)" if start is not None else ""


def seed_spread_lines(scores: Dict[str, Any], row: str = "simcse unsup") -> List[str]:
    """What the spread between a row's seeds (3 or more) means for a user: each seed's STS avg, the range, and
    what keeping the seed best on STS-B dev (chosen without test labels, as a user can) gave."""
    seeds = sorted((int(name.rsplit(" seed ", 1)[1]), e) for name, e in scores.items()
                   if isinstance(e, dict) and name.startswith(row + " seed ") and "sts_avg" in e
                   and e.get("stsb_dev") is not None)
    if len(seeds) < 3:
        return []
    avg = np.asarray([e["sts_avg"] for _, e in seeds])
    dev = np.asarray([e["stsb_dev"] for _, e in seeds])
    chosen = int(np.argmax(dev))
    rank = 1 + int(np.sum(avg > avg[chosen]))
    where = "also the best" if rank == 1 else f"number {rank} of {len(seeds)}"
    return [f"{row} over {len(seeds)} seeds: STS avg " + ", ".join(f"{a:.2f} (seed {s})" for (s, _), a in
                                                                  zip(seeds, avg))
            + f"; from {avg.min():.2f} to {avg.max():.2f}, a spread of {avg.max() - avg.min():.2f} points (sd "
            f"{np.std(avg, ddof=1):.2f}).",
            "",
            f"For a user: one run of {row} from this start can land anywhere in that range, so a comparison "
            "of one seed against one seed of another method can be decided by the seeds. The seed best on STS-B "
            f"dev (seed {seeds[chosen][0]}, {dev[chosen]:.2f}) is {where} on STS avg ({avg[chosen]:.2f}): "
            f"training {len(seeds)} seeds and keeping the one best on STS-B dev (or on your own dev pairs) gave "
            f"{avg[chosen] - avg.mean():+.2f} points over the mean seed here."] + _read_out_spread(scores, row, seeds)


def _read_out_spread(scores: Dict[str, Any], row: str, seeds) -> List[str]:
    """The same seeds' models read out with mean pooling (the "<row> (mean pooling) seed N" rows), when every seed
    has one: whether the spread between seeds is in the read-out the row trains or in the encoder."""
    pooled = [scores.get(f"{row} (mean pooling) seed {s}", {}).get("sts_avg") for s, _ in seeds]
    if any(p is None for p in pooled):
        return []
    pooled, avg = np.asarray(pooled), np.asarray([e["sts_avg"] for _, e in seeds])
    sd, sd_row = np.std(pooled, ddof=1), np.std(avg, ddof=1)
    raw = scores.get("raw (mean)", {}).get("sts_avg")
    line = (f"The same {len(seeds)} models read out with mean pooling instead of the pooling they were trained "
            f"with: STS avg from {pooled.min():.2f} to {pooled.max():.2f} (sd {sd:.2f}), mean {pooled.mean():.2f}"
            + (f", {pooled.mean() - raw:+.2f} over the raw model" if raw is not None else "") + ".")
    if sd < sd_row / 2:
        line += (" Most of the spread between seeds is in the read-out they learn, not in their encoders: read "
                 f"out with mean pooling, the {len(seeds)} models lie within {pooled.max() - pooled.min():.2f} "
                 "points of each other.")
    return ["", line]


def te_phase_rows(scores: Dict[str, Any]) -> Dict[str, List[List[List[float]]]]:
    """{phase (e.g. "cycle1_cross_a"): its STS-B dev curve in each Trans-Encoder seed that recorded one}, the
    phases in the order they ran."""
    rows: Dict[str, List[List[List[float]]]] = {}
    for name, entry in sorted(scores.items()):
        if isinstance(entry, dict) and name.startswith("trans_encoder seed "):
            for p in entry.get("phases") or []:
                if p.get("stsb_dev_curve"):
                    rows.setdefault(p["phase"], []).append(p["stsb_dev_curve"])
    return rows


def te_phase_table(scores: Dict[str, Any]) -> List[str]:
    """Per Trans-Encoder phase: its seeds' best steps within the phase, STS-B dev at the best and at the phase's
    last evaluation, and each seed's curve shape (`curve_shape`): whether the phase's budget let it peak."""
    rows = te_phase_rows(scores)
    if not rows:
        return []
    return ["| phase | seeds | best steps | STS-B dev at best | at the phase's end | curve, per seed |",
            "| --- | --- | --- | --- | --- | --- |",
            *(_curve_row(phase, [_arrays(c) for c in curves]) for phase, curves in rows.items())]


def _plot_te_phases(ax, rows: Dict[str, List[List[List[float]]]]) -> None:
    """Each Trans-Encoder phase's STS-B dev curves (seeds thin, their mean thick) end to end, phases apart."""
    offset, labelled = 0, set()
    for phase, curves in rows.items():
        kind = "cross" if "_cross_" in phase else "bi"
        colour = "C0" if kind == "cross" else "C1"
        for c in curves:
            ax.plot([offset + p[0] for p in c], [p[1] for p in c], color=colour, alpha=0.3, linewidth=0.8)
        common = min(len(c) for c in curves)
        ax.plot([offset + p[0] for p in curves[0][:common]], np.mean([[p[1] for p in c[:common]] for c in curves],
                                                                   axis=0),
                color=colour, marker=".", label=None if kind in labelled else f"{kind}-encoder phases")
        labelled.add(kind)
        offset += max(c[-1][0] for c in curves)
        ax.axvline(offset, color="0.8", linewidth=0.6)
    ax.set_title("Trans-Encoder: STS-B dev within each phase", fontsize=9)
    ax.set_xlabel("step (phases end to end)", fontsize=8)
    ax.legend(fontsize=6)


def plot_selected_curves(scores: Dict[str, Any], out_dir: str):
    """dev_curves.png: STS-B dev over training of each SimCSE and DeCLUTR row (each seed thin, their mean thick),
    one panel per family, and of each Trans-Encoder phase (`te_phase_rows`); None without curves."""
    from common.figures import new_figure, write_png

    rows = selected_curve_rows(scores)
    families = [f for f in SELECTED_FAMILIES if any(name.startswith(f) for name in rows)]
    te_rows = te_phase_rows(scores)
    if not families and not te_rows:
        return None
    panels = len(families) + bool(te_rows)
    fig = new_figure((4.5 * panels, 3.4), dpi=100)
    axes = fig.subplots(1, panels, squeeze=False)[0]
    if te_rows:
        _plot_te_phases(axes[-1], te_rows)
    for ax, family in zip(axes, families):
        for k, (name, entries) in enumerate((n, e) for n, e in rows.items() if n.startswith(family)):
            curves = [_curve(e, "stsb_dev") for e in entries]
            for steps, values in curves:
                ax.plot(steps, values, color=f"C{k}", alpha=0.3, linewidth=0.8)
            common = min(len(c[0]) for c in curves)
            ax.plot(curves[0][0][:common], np.mean([c[1][:common] for c in curves], axis=0), color=f"C{k}",
                    marker=".", label=f"{name} ({len(curves)} seeds)")
        start = _start_dev(scores)
        if start is not None:
            ax.axhline(start, color="0.5", linestyle="--", linewidth=0.8, label=f"the start, raw (mean): {start:.2f}")
        ax.set_title(f"{'SimCSE' if family == 'simcse' else 'DeCLUTR'}: STS-B dev over training", fontsize=9)
        ax.set_xlabel("step", fontsize=8)
        ax.legend(fontsize=6)
    fig.tight_layout()
    path = os.path.join(out_dir, "dev_curves.png")
    write_png(fig, path)
    return path


def pause_curve_table(scores: Dict[str, Any], percentages: List[str]) -> List[str]:
    """Per PAUSE-family row: STS-B dev at its best evaluation (the published step) and at the last step, the
    best steps of its seeds, and the training accuracy at the best step (mean over seeds)."""
    rows = pause_curve_rows(scores, percentages)
    if not rows:
        return []
    lines = ["| row | seeds | best steps | STS-B dev at best | at the last step | first step at training "
             "accuracy >= 0.99 |", "| --- | --- | --- | --- | --- | --- |"]
    for name, entries in rows.items():
        best, last, steps, memorised = [], [], [], []
        for e in entries:
            at, dev = _curve(e, "stsb_dev")
            i = int(np.argmax(dev))
            best.append(float(dev[i]))
            last.append(float(dev[-1]))
            steps.append(str(int(at[i])))
            accuracy = _curve(e, "accuracy")
            if accuracy is not None:
                hit = np.nonzero(accuracy[1] >= 0.99)[0]
                memorised.append(str(int(accuracy[0][hit[0]])) if len(hit) else "never")
        lines.append(f"| {name} | {len(entries)} | {', '.join(steps)} | {_mean_std(best)} | {_mean_std(last)} | "
                     f"{', '.join(memorised) or '-'} |")
    return lines


def _first_run_start(root: str):
    """The start (seconds since the epoch, UTC) of the ladder's first run, from its run ID."""
    import calendar
    import datetime
    import glob

    ids = [os.path.basename(p) for p in glob.glob(os.path.join(root, "runs", "*", "ckpt", "*"))]
    stamps = [calendar.timegm(datetime.datetime.strptime(i, "%Y%m%d-%H%M%S").timetuple())
              for i in ids if len(i) == 15 and i[8] == "-"]
    return min(stamps) if stamps else None


def _start_lines(scores: Dict[str, Any]) -> List[str]:
    """What the start is and how far its pretraining got above the unigram plateau."""
    start, pre = scores.get("_start"), scores.get("pretrain", {})
    if start and start.get("evals"):
        last, uni = start["evals"][-1], start["unigram"]
        pilots = ", ".join(f"{p['lr']:g}: {p['heldout_loss']:.3f}" for p in start.get("pilots", []))
        return [f"Start: `{os.path.basename(start['path'])}`, a {start['size']} pretrained with Hugging Face "
                f"`transformers`' BertForMaskedLM (`bench/hf_pretrain.py`, {start.get('transformers')}) on "
                f"{start['device']}: {start['epochs']:.0f} epochs of the Gutenberg books ({start['training_tokens']:,} "
                f"tokens in {start['training_windows']:,} windows of {start['window']}; "
                f"{len(start.get('heldout_titles') or [])} whole books held out), batch {start['batch_size']}, "
                f"{start['precision']}, dropout {start['pretraining_dropout']:g} while pretraining "
                f"({start['saved_dropout']:g} in the saved config for the rungs), peak learning rate "
                f"{start['chosen_lr']:g}"
                + (f" chosen by held-out loss after short pilots ({pilots})" if pilots else "")
                + f"; {start['seconds']:.0f} s at {start['tokens_per_second']:,.0f} tokens/s.",
                f"Held-out masked-LM loss {last['loss']:.3f} and accuracy {100 * last['accuracy']:.1f} %; the "
                f"unigram-frequency predictor on the same {uni['masked_tokens']:,} masked tokens: loss "
                f"{uni['loss']:.3f}, accuracy {100 * uni['accuracy']:.1f} %."]
    if "train_seconds" in pre:
        s, metrics = pre["settings"], pre.get("metrics", {})
        tokens = s["batch_size"] * s["train_epochs"] * s["train_steps_per_epoch"] * 128
        seconds = metrics.get("seconds", pre["train_seconds"])
        return [f"Start: pretrained here with `--method=mlm`: {s['train_epochs'] * s['train_steps_per_epoch']} steps "
                f"of {s['batch_size']} windows of 128 tokens ({tokens / 1e6:.2f} M tokens) in {seconds:.0f} s "
                f"({tokens / seconds:.0f} tokens/s); held-out masked-LM loss "
                f"{metrics.get('heldout_loss', float('nan')):.3f}, accuracy "
                f"{100 * metrics.get('heldout_accuracy', float('nan')):.1f} %; unigram predictor on the same masks: "
                f"loss {metrics.get('heldout_unigram_loss', float('nan')):.3f}, accuracy "
                f"{100 * metrics.get('heldout_unigram_accuracy', float('nan')):.1f} %"
                + (f"; STS-B dev (mean pooling) {metrics['stsb_dev_spearman']:.2f}" if "stsb_dev_spearman" in metrics
                   else "") + "." + _pilot_text(scores.get("_pilots"))]
    return []


def _pilot_text(pilots) -> str:
    if not pilots:
        return ""
    tried = ", ".join(f"{p['lr']:g}: {p['heldout_loss']:.3f}" + (f" (STS-B dev {p['stsb_dev']:.2f})"
                                                                   if p.get("stsb_dev") is not None else "")
                      for p in pilots["pilots"])
    return (f" Peak learning rate {pilots['chosen_lr']:g}, the lowest held-out loss of "
            f"{pilots['pilots'][0]['steps']}-step pilots ({tried}; STS-B dev, where measured, shown and not used).")


def _sweep_lines(scores: Dict[str, Any]) -> List[str]:
    """The learning rates tried on STS-B dev (seed 0) before a family trained every seed."""
    sweeps = scores.get("_lr_sweeps", {})
    return [f"{family}: learning rate {sweep['chosen_lr']:g} for every seed, the best STS-B dev of seed-0 runs at "
            + ", ".join(f"{p['lr']:g} ({p['stsb_dev']:.2f}, step {p['step']})" for p in sweep["tried"])
            + " (STS-B dev of each run's published step)." for family, sweep in sorted(sweeps.items())]


# Invocations shorter than this train nothing (a page rewrite): their CPU ratio has a near-zero denominator.
MIN_TIMED_INVOCATION = 60.0


def other_cores_clause(invocations) -> str:
    """The page's account of the CPU other processes used, over the invocations that ran a minute or more."""
    timed = [i for i in invocations if i.get("seconds", 0) >= MIN_TIMED_INVOCATION]
    if not timed or not all("other_cores" in i for i in timed):
        return ""
    return (f"; CPU used by other processes, averaged over each invocation of a minute or more: at most "
            f"{max(i['other_cores'] for i in timed):.2f} cores")


def write_results(scores: Dict[str, Any], runs_root: str, results_dir: str, command: str) -> str:
    """The results page (`results_dir`/README.md), its plots and results.json; returns the page's text."""
    recorded = scores  # results.json keeps every row, those of another budget too
    scores, other_budget = at_budget(scores, FLAGS.pause_steps, budget_of_te())
    other_te = [(name, run) for name, run in other_budget if isinstance(run, str)]
    other_budget = [(name, steps) for name, steps in other_budget if not isinstance(steps, str)]
    found = claims(scores, FLAGS.percentages, collapsed_runs(scores, runs_root))
    lines = pages.header("Reproduction ladder: results", "bench.reproduce", command, results_dir=results_dir)
    lines += _start_lines(scores) + [""]
    sweeps = _sweep_lines(scores)
    if sweeps:
        lines += [*sweeps, ""]
    lines += ["Scores: Spearman x100 of cosine similarity; STS avg over STS12-16, STS-B test and SICK-R test; "
              "every model scored on untruncated sentences. Trained rows: mean ± sample sd over seeds. Settings "
              "were chosen on STS-B dev and held-out masked-LM loss only. train s: the median over seeds of a "
              "run's training time (all pieces of a resumed run, STS-B dev evaluations during training included; "
              "the last piece's wall time for a run that records no total), on whatever else the machine ran "
              "then.", "",
              report(scores), "",
              "## Claims", "", verdicts.RULES, "", *claim_lines(found, read_parity(), PARITY_PAGE), "",
              PAUSE_PAPER_CLAIM, ""]
    spread = seed_spread_lines(scores)
    if spread:
        lines += ["## The spread between seeds", "", *spread, ""]
    if other_budget:
        lines += ["## PAUSE rows not yet trained at this budget", "",
                  f"Rows that earlier invocations trained at another number of steps; they are left out of the "
                  f"table, the claims and the plots until trained at {FLAGS.pause_steps} steps of 64 pairs "
                  + pause_estimate(scores) + ":", "",
                  *[f"- {name} ({steps} steps)" for name, steps in other_budget], ""]
    if other_te:
        lines += ["## Trans-Encoder rows not yet trained at this budget", "",
                  f"Rows that earlier invocations trained at another budget; they are left out of the table, the "
                  f"claims and the plots until trained at {budget_of_te()}:", "",
                  *[f"- {name} ({run})" for name, run in other_te], ""]
    curves = pause_curve_table(scores, FLAGS.percentages)
    if curves:
        lines += ["## PAUSE and supervised-only over training", "",
                  "Each row evaluates STS-B dev every few hundred steps and publishes its best evaluation "
                  "(`--publish_best`), as the SimCSE rows do; `pause_curves.png` below draws the curves. The last "
                  "column is the first logged step at which the labelled pairs of a batch were classified with "
                  "accuracy >= 0.99 (the kept labels memorised), one value per seed.", "", *curves, "",
                  *ablation_lines(scores), ""]
    selected, uncurved = selected_curve_table(scores), uncurved_line(scores)
    if selected or uncurved:
        lines += ["## SimCSE and DeCLUTR over training", "",
                  "These rows evaluate STS-B dev while they train and publish their best evaluation; a curve that "
                  "peaked before its last evaluation, or flattened there, had budget enough (one that peaked at its "
                  "first evaluation may have peaked earlier still: a DeCLUTR row, read out by the mean as the start "
                  "is, says whether that evaluation was above the start's, which puts its peak between the start "
                  "and the second evaluation); one still rising "
                  f"(its last evaluation its best, by more than {STILL_RISING} points) needs more steps. "
                  "`dev_curves.png` below draws them" + start_dev_clause(scores) + ".", "",
                  *([*selected, ""] if selected else []), *uncurved]
    te_phases = te_phase_table(scores)
    if te_phases:
        lines += ["## Trans-Encoder within each phase", "",
                  f"Each phase of a Trans-Encoder row (a cycle's cross-encoder, then its bi-encoder) evaluates its "
                  f"model on STS-B dev every {FLAGS.te_eval_every} steps and at its end, and keeps its best weights "
                  "(`--best_in_phase`); the row publishes its best cycle. A phase whose curve peaked or flattened "
                  "had budget enough; one still rising needs more steps. `dev_curves.png` below draws them.", "",
                  *te_phases, ""]
    lines += not_run_lines(scores, {"pause": FLAGS.pause_steps, "supervised": FLAGS.pause_steps,
                                    "simcse unsup": FLAGS.simcse_steps, "simcse sup": FLAGS.simcse_steps,
                                    "declutr": FLAGS.declutr_steps, "trans_encoder": budget_of_te()})
    meta = scores.get("_meta", {})
    # The first run's start, kept in _meta: the runs' folders of an earlier machine are not on this one.
    found_first = _first_run_start(runs_root)
    first = min(t for t in (meta.get("first_run_start"), found_first) if t) if (found_first or meta.get(
        "first_run_start")) else None
    meta["first_run_start"] = first
    trained = sum(e.get("train_seconds", 0.0) for k, e in scores.items() if isinstance(e, dict) and k != "_meta")
    lines.append("## Time")
    lines.append("")
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
                     f"{len(invocations)} invocation(s); highest 1-minute load average seen at a save (the ladder's "
                     f"own threads included): {max(i['max_load1'] for i in invocations):.2f}"
                     + other_cores_clause(invocations) + ".")
    commands = sorted((i["start"], i.get("command", "(not recorded)")) for i in meta.get("invocations", {}).values())
    if commands:
        lines += ["", "The invocations that trained and scored the rows "
                  "(a later one reuses what an earlier one finished):", ""]
        lines += [f"- {time.strftime('%Y-%m-%d %H:%M', time.gmtime(start))} UTC: "
                  + (f"`{command}`" if command.startswith("python") else command)
                  for start, command in commands]
    lines.append("")
    os.makedirs(results_dir, exist_ok=True)
    lines += [f"![{os.path.basename(p)}]({os.path.basename(p)})" for p in plot(scores, runs_root, results_dir,
                                                                                FLAGS.percentages)]
    compact = {k: ({kk: vv for kk, vv in v.items() if kk not in ("sts", "senteval")} if isinstance(v, dict) else v)
               for k, v in recorded.items()}
    return pages.write(results_dir, lines, {"claims": [dict(claim=v.claim, outcome=v.outcome, detail=v.detail)
                                                       for v in found], "scores": compact})


if __name__ == "__main__":
    define_flags()
    cli.run(main)
