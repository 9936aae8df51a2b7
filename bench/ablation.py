"""Each method against its ablations and its untrained start, from the offline MiniLM at a CPU budget.

    .venv/bin/python -m bench.ablation --method=pause --data_path=../shared/data
    .venv/bin/python -m bench.ablation --method=declutr --data_path=../shared/data
    .venv/bin/python -m bench.ablation --method=simcse --data_path=../shared/data
    .venv/bin/python -m bench.ablation --method=trans_encoder --data_path=../shared/data --pairs=2000 --cycles=2
    .venv/bin/python -m bench.ablation --method=trans_encoder --data_path=../shared/data --mutual_init=<run ID>

What each method runs (its settings are the dataclass of the same name below; every one of them is
a flag, and a flag the chosen method does not use is an error):

- pause: same steps, seed and labels for (a) PAUSE, (b) supervised only (cross-entropy on the same
  labelled pairs, batches all labelled, no PU term) and (c) PAUSE with the original per-epoch
  annealing, on SentEval's SNLI dev+test pairs; then training throughput (pairs/s) with each batch
  padded to its longest pair against padding to 128. `--throughput_only` prints that alone.
- declutr: contrastive + MLM, contrastive only and MLM only (same steps, seed and spans) on the
  documents of `--train_data`, scored with SentEval's transfer tasks too (`--senteval_tasks`;
  empty to skip).
- simcse: unsup SimCSE for each of `--poolings` on the sentences of `--train_data`, and
  cluster_eval.py's evaluation on TREC (k-means V-measure; PNG pictures under
  `<artifacts_dir>/test/`).
- trans_encoder: a seeded sample of `--pairs` of the unlabelled sts_sickr pairs, `--cycles` cycles
  with the official settings except the budget (the sample and the bi-encoder epochs), scored on
  the seven STS sets and STS-B dev: the start bi-encoder, then after each cycle the bi-encoder
  (cosine) and the cross-encoder (its pair scores; with `--mutual_init` the ensemble of both).
  `--resume=<run ID>` continues an interrupted benchmark run (same flags).

Every row is scored on STS-B dev and SICK-R test (Spearman x100), the untrained start included.
Writes the dated results page (machine, load, command, commit, table) and results.json to
`--results_dir` (by default docs/benchmarks/ablation/<method>, or .../trans_encoder_mutual with
`--mutual_init`). Not part of the test suite; run it on an idle machine.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from typing import Any, Callable, Dict, List, Tuple

from absl import flags

from common import cli  # first: it quiets TensorFlow's start-up

from bench import harness
from common.errors import UserError

FLAGS = flags.FLAGS
MODULE = "bench.ablation"


# === Settings ===

@dataclasses.dataclass(frozen=True)
class Run:
    """What every method's ablation shares."""

    data_path: str
    artifacts_dir: str
    seed: int


@dataclasses.dataclass(frozen=True)
class Pause:
    """--method=pause: each field is the flag of the same name (its help: HELP)."""

    model: str = "minilm"
    train_epochs: int = 4
    train_steps_per_epoch: int = 60
    batch_size: int = 32
    pos_sample_prec: float = 5.0
    throughput_steps: int = 25
    throughput_only: bool = False


@dataclasses.dataclass(frozen=True)
class Declutr:
    """--method=declutr: each field is the flag of the same name."""

    model: str = "minilm"
    train_data: Tuple[str, ...] = ("documents/wikitext-2-raw/test.txt", "documents/wikitext-2-tokenized/valid.txt")
    steps: int = 120
    batch_size: int = 4
    min_span_len: int = 16
    max_span_len: int = 128
    max_seq_len: int = 192
    senteval_tasks: Tuple[str, ...] = ("MR", "CR", "SUBJ", "MPQA", "TREC", "MRPC")
    senteval_config: str = "fast"


@dataclasses.dataclass(frozen=True)
class Simcse:
    """--method=simcse: each field is the flag of the same name."""

    model: str = "minilm"
    train_data: Tuple[str, ...] = ("senteval:dev", "senteval:test")
    steps: int = 250
    poolings: Tuple[str, ...] = ("cls_mlp", "mean")


@dataclasses.dataclass(frozen=True)
class TransEncoder:
    """--method=trans_encoder: each field is the flag of the same name."""

    model: str = "minilm"
    mutual_init: str = ""
    pairs: int = 1000
    cycles: int = 1
    bi_epochs: int = 1
    resume: str = ""


METHODS = {"pause": Pause, "declutr": Declutr, "simcse": Simcse, "trans_encoder": TransEncoder}

# Each setting's flag help, once, whichever methods share it.
HELP = {
    "model": "The start (and the untrained row): an encoder spec, run ID or model folder.",
    "train_epochs": "Epochs per variant.",
    "train_steps_per_epoch": "Steps per epoch.",
    "batch_size": "Global batch size (pause: pairs; declutr: documents, x num_anchors anchors).",
    "pos_sample_prec": "Percent of labels kept.",
    "throughput_steps": "Steps of each throughput run (the first 5 are not timed).",
    "throughput_only": "Only measure training throughput (dynamic vs fixed 128) and print it; no page.",
    "train_data": "Training data (relative to --data_path; see train.py --help).",
    "steps": "Optimizer steps per variant.",
    "min_span_len": "l_min (the paper: 32).",
    "max_span_len": "l_max (the paper: 512; shorter here for a CPU budget).",
    "max_seq_len": "Word-piece truncation length.",
    "senteval_tasks": "SentEval tasks; empty: skip.",
    "senteval_config": "SentEval setting.",
    "poolings": "SimCSE poolings, one trained row each (batch 64, max length 32, lr 3e-5: the paper's).",
    "mutual_init": "Second bi-encoder start for mutual distillation (spec or run ID).",
    "pairs": "Pairs sampled from sts_sickr (each used in both orders by the cross-encoder).",
    "cycles": "Trans-Encoder cycles.",
    "bi_epochs": "Bi-encoder epochs per cycle (the official protocol: 10).",
    "resume": "Run ID of an interrupted benchmark run (same flags) to continue: finished phases are kept, the "
              "unfinished one resumes from its last checkpoint.",
}

_DEFINE = {"int": flags.DEFINE_integer, "float": flags.DEFINE_float, "bool": flags.DEFINE_bool,
           "str": flags.DEFINE_string, "Tuple[str, ...]": flags.DEFINE_list}


def setting_fields() -> Dict[str, Tuple[str, Dict[str, Any]]]:
    """Setting name -> (its type, {method: its default}), over every method."""
    out: Dict[str, Tuple[str, Dict[str, Any]]] = {}
    for method, cls in METHODS.items():
        for field in dataclasses.fields(cls):
            kind, defaults = out.setdefault(field.name, (field.type, {}))
            if kind != field.type:
                raise TypeError(f"Setting {field.name} is {kind} in one method and {field.type} in {method}.")
            defaults[method] = field.default
    return out


def define_flags() -> None:
    """The driver's flags, defined when it runs, not at import (see bench/harness.py). Each method
    setting is one flag, unset by default: the chosen method's default applies."""
    flags.DEFINE_enum("method", None, list(METHODS), "The method whose ablation runs.")
    flags.DEFINE_string("data_path", "data", "Data root (holds downstream/ and documents/).")
    flags.DEFINE_string("artifacts_dir", "artifacts/bench", "Where the benchmark's runs are written.")
    flags.DEFINE_string("results_dir", "", "Where the results page (README.md) and results.json are written; "
                        "empty: docs/benchmarks/ablation/<method> (trans_encoder with --mutual_init: "
                        "docs/benchmarks/ablation/trans_encoder_mutual).")
    flags.DEFINE_integer("seed", 0, "Seed shared by every variant (trans_encoder: of the sample and the run).")
    for name, (kind, defaults) in setting_fields().items():
        shown = "; ".join(f"{m}: {','.join(v) if isinstance(v, tuple) else v}" for m, v in defaults.items())
        _DEFINE[kind](name, None, f"{HELP[name]} [{shown}]")


def settings_for(method: str, given: Dict[str, Any]):
    """The method's settings: its defaults, replaced by the flags given.

    Raises:
        UserError: for a method that is not one of METHODS, or a setting it does not use.
    """
    if method not in METHODS:
        raise UserError(f"--method must be one of {', '.join(METHODS)}; got {method!r}.")
    cls = METHODS[method]
    names = [f.name for f in dataclasses.fields(cls)]
    unused = sorted(set(given) - set(names))
    if unused:
        raise UserError(f"--method={method} does not use {', '.join('--' + u for u in unused)}; its settings: "
                        f"{', '.join('--' + n for n in names)}.")
    return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in given.items()})


def default_results_dir(method: str, settings) -> str:
    """Where the page goes without --results_dir."""
    name = "trans_encoder_mutual" if method == "trans_encoder" and settings.mutual_init else method
    return os.path.join("docs", "benchmarks", "ablation", name)


def _start_name(model: str) -> str:
    return "MiniLM" if model == "minilm" else model


# === Scoring ===

def _sts(embedder, data_path) -> Dict[str, float]:
    """STS-B dev and SICK-R test Spearman x100 of an embedder."""
    from common.evaluation.sts import sickr_test_spearman, stsb_dev_spearman

    embed = lambda s: embedder.embed(s, progress=False)  # noqa: E731
    return {"stsb_dev": stsb_dev_spearman(embed, data_path), "sickr_test": sickr_test_spearman(embed, data_path)}


def _train_variants(variants: Dict[str, Any], run: Run, score: Callable, extra: Callable) -> Dict[str, Dict]:
    """Trains each config, then scores it; train seconds are taken before scoring (minutes of its own)."""
    from common.loading.resolve import resolve_model
    from common.training.runs import train

    results = {}
    for name, config in variants.items():
        start = time.time()
        trained = train(config)
        train_seconds = round(time.time() - start, 1)
        embedder = resolve_model(trained["run_id"], artifacts_dir=run.artifacts_dir)
        results[name] = {**score(embedder), "run_id": trained["run_id"], "train_seconds": train_seconds,
                         **extra(trained)}
    return results


# === PAUSE ===

def _throughput(base, steps: int, batch_size: int, pad: int) -> float:
    """Training pairs/s of `base` at max length 128, batches padded to multiples of `pad` (1: their longest)."""
    from common.training.runs import train

    times = []
    config = base.replace(train_epochs=1, train_steps_per_epoch=steps, max_seq_len=128, pad_to_multiple_of=pad,
                          eval_each_epoch=False, checkpoint_every=10_000, log_every=10_000)
    train(config, after_step=lambda step, model: times.append(time.perf_counter()))
    timed = times[5:]
    return batch_size * (len(timed) - 1) / (timed[-1] - timed[0])


def pause(s: Pause, run: Run):
    """(title, setting lines, body lines, data); None with --throughput_only (printed, no page)."""
    from common.loading.resolve import resolve_model
    from common.training.registry import build_config

    base = build_config("pause", dict(
        model=s.model, train_data=("senteval:dev", "senteval:test"), data_path=run.data_path,
        train_epochs=s.train_epochs, train_steps_per_epoch=s.train_steps_per_epoch, batch_size=s.batch_size,
        max_seq_len=128, pos_sample_prec=s.pos_sample_prec, prior=1 / 3, seed=run.seed, artifacts_dir=run.artifacts_dir,
        eval_each_epoch=False, checkpoint_every=10_000, log_every=20))

    def throughput():
        rates = {"dynamic": _throughput(base, s.throughput_steps, s.batch_size, 1),
                 "fixed 128": _throughput(base, s.throughput_steps, s.batch_size, 128)}
        line = (f"Training throughput (pairs/s, batch {s.batch_size}): batches padded to their longest pair "
                f"{rates['dynamic']:.1f}; padded to 128 tokens {rates['fixed 128']:.1f}.")
        return rates, line

    if s.throughput_only:
        print(throughput()[1])
        return None
    variants = {
        "(a) PAUSE": base,
        "(b) supervised only": base.replace(annealing="off", labeled_batch_fraction=1.0),
        "(c) PAUSE, per-epoch annealing": base.replace(annealing="per_epoch"),
    }
    start = resolve_model(s.model, artifacts_dir=run.artifacts_dir)
    results = {f"untrained {_start_name(s.model)}": _sts(start, run.data_path)}
    results.update(_train_variants(variants, run, lambda e: _sts(e, run.data_path),
                                   lambda trained: {"final_pu_weight": trained["metrics"].get("pu_weight")}))
    rates, line = throughput()
    steps = s.train_epochs * s.train_steps_per_epoch
    setting = [f"Setting: from {_start_name(s.model)} on SentEval's SNLI dev+test pairs, {s.pos_sample_prec:g} % "
               f"labels, {steps} steps of {s.batch_size} pairs ({s.train_epochs} x {s.train_steps_per_epoch}), "
               f"seed {run.seed}"]
    body = ["| model | STS-B dev | SICK-R test |", "| --- | --- | --- |"]
    body += [f"| {name} | {r['stsb_dev']:.2f} | {r['sickr_test']:.2f} |" for name, r in results.items()]
    body += ["", line]
    return (f"PAUSE from {_start_name(s.model)}: its ablations", setting, body,
            {"results": results, "throughput_pairs_per_s": rates})


# === DeCLUTR ===

def declutr(s: Declutr, run: Run):
    """(title, setting lines, body lines, data) of the DeCLUTR ablation."""
    from common.loading.resolve import resolve_model
    from common.evaluation.senteval import EmbeddingCache, evaluate_senteval, get_config
    from common.training.registry import build_config

    def score(embedder):
        out = _sts(embedder, run.data_path)
        if s.senteval_tasks:
            embed = lambda sentences, desc: embedder.embed(sentences, progress=False)  # noqa: E731
            senteval = evaluate_senteval(embed, run.data_path, list(s.senteval_tasks), get_config(s.senteval_config),
                                         1111, EmbeddingCache(), embedder.name)
            out["senteval"] = {t: r.get("acc") for t, r in senteval["tasks"].items()}
            out["senteval_mean"] = sum(out["senteval"].values()) / len(out["senteval"])
        return out

    base = build_config("declutr", dict(
        model=s.model, train_data=tuple(s.train_data), data_path=run.data_path, train_epochs=1,
        train_steps_per_epoch=s.steps, batch_size=s.batch_size, min_span_len=s.min_span_len,
        max_span_len=s.max_span_len, max_seq_len=s.max_seq_len, seed=run.seed, artifacts_dir=run.artifacts_dir,
        eval_each_epoch=False, checkpoint_every=10_000, log_every=20))
    variants = {
        "contrastive + MLM": base,
        "contrastive only": base.replace(mlm=False),
        "MLM only": base.replace(contrastive=False),
    }
    results = {f"untrained {_start_name(s.model)}": score(resolve_model(s.model, artifacts_dir=run.artifacts_dir))}
    results.update(_train_variants(variants, run, score, lambda trained: {
        "documents": trained["data"]["documents"], "skipped_short": trained["data"]["skipped_short"]}))
    tasks = list(s.senteval_tasks)
    setting = [f"Setting: {_start_name(s.model)} + DeCLUTR on {', '.join(s.train_data)}, {s.steps} steps of "
               f"{s.batch_size} documents, spans {s.min_span_len}-{s.max_span_len} tokens, max {s.max_seq_len} word "
               f"pieces, seed {run.seed}; SentEval '{s.senteval_config}'"]
    body = ["| model | STS-B dev | SICK-R test | " + " | ".join(tasks) + (" | mean |" if tasks else ""),
            "| --- " * (3 + len(tasks) + (1 if tasks else 0)) + "|"]
    for name, r in results.items():
        cells = [f"{r['stsb_dev']:.2f}", f"{r['sickr_test']:.2f}"]
        if tasks:
            cells += [f"{r['senteval'][t]:.2f}" for t in tasks] + [f"{r['senteval_mean']:.2f}"]
        body.append(f"| {name} | " + " | ".join(cells) + " |")
    body += ["", "Training took " + ", ".join(f"{r['train_seconds']:.0f} s" for r in results.values()
                                              if "train_seconds" in r) + "."]
    return f"DeCLUTR from {_start_name(s.model)}: its ablations", setting, body, {"results": results}


# === SimCSE ===

def simcse(s: Simcse, run: Run):
    """(title, setting lines, body lines, data) of the SimCSE poolings."""
    from common import artifacts
    from common.evaluation.clustering import cluster_scores, load_senteval_task, plot_projection, project_2d
    from common.loading.resolve import resolve_model
    from common.training.registry import build_config

    out_dir = os.path.join(run.artifacts_dir, "test")
    os.makedirs(out_dir, exist_ok=True)

    def score(embedder):
        texts, labels = load_senteval_task(run.data_path, "TREC", "train")
        vectors = embedder.embed(texts, progress=False)
        clusters = cluster_scores(vectors, labels, run.seed)
        picture = artifacts.join(out_dir, f"cluster_{embedder.name}_TREC.png")
        plot_projection(project_2d(vectors, "pca", run.seed), labels, picture,
                        f"{embedder.name} on TREC train (PCA); V-measure {clusters['v_measure']:.1f}")
        return {**_sts(embedder, run.data_path), "trec": {**clusters, "picture": picture}}

    variants = {f"unsup SimCSE, --pooling={pooling}": build_config("simcse", dict(
        simcse_mode="unsup", model=s.model, train_data=tuple(s.train_data), data_path=run.data_path,
        train_steps_per_epoch=s.steps, pooling=pooling, seed=run.seed, artifacts_dir=run.artifacts_dir,
        eval_each_epoch=False, checkpoint_every=10_000, log_every=25)) for pooling in s.poolings}
    results = {f"untrained {_start_name(s.model)}": score(resolve_model(s.model, artifacts_dir=run.artifacts_dir))}
    results.update(_train_variants(variants, run, score, lambda trained: {"sentences": trained["data"]["examples"]}))
    setting = [f"Setting: unsup SimCSE from {_start_name(s.model)}, {s.steps} steps of 64 sentences "
               f"({', '.join(s.train_data)}), seed {run.seed}; TREC train for the clustering (k-means V-measure)"]
    body = ["| model | STS-B dev | SICK-R test | TREC V-measure |", "| --- | --- | --- | --- |"]
    body += [f"| {name} | {r['stsb_dev']:.2f} | {r['sickr_test']:.2f} | {r['trec']['v_measure']:.2f} |"
             for name, r in results.items()]
    return f"Unsupervised SimCSE from {_start_name(s.model)}", setting, body, {"results": results}


# === Trans-Encoder ===

STS_COLUMNS = "| model | STS12 | STS13 | STS14 | STS15 | STS16 | STS-B | SICK-R | avg | STS-B dev |"


def trans_encoder(s: TransEncoder, run: Run):
    """(title, setting lines, body lines, data) of the Trans-Encoder cycles; each row is also saved to
    `<artifacts_dir>/ablation_trans_encoder[_mutual].json` as soon as it is scored."""
    import numpy as np
    import tensorflow as tf

    from common.loading.embedding import embed_sentences, score_sentence_pairs
    from common.evaluation.evaluators import StsbDevEvaluator
    from common.evaluation.sts import evaluate_sts, evaluate_sts_pairs, headline_numbers
    from common.training.loop import RunPaths
    from common.training.phases import PhaseRunner
    from common.training.registry import build_config
    from common.training.run_settings import load_run_config
    from common.training.runs import RunContext, train
    from trans_encoder_tf.data import sts_sickr_pairs
    from trans_encoder_tf.method import _Models, embed_fn_of, members, pair_fn_of

    os.makedirs(run.artifacts_dir, exist_ok=True)
    pairs = sts_sickr_pairs(run.data_path)
    chosen = np.random.default_rng(run.seed).choice(len(pairs), size=min(s.pairs, len(pairs)), replace=False)
    pair_file = os.path.join(run.artifacts_dir, f"sts_sickr_sample_{s.pairs}_{run.seed}.tsv")
    with open(pair_file, "w", encoding="utf-8") as f:
        f.writelines(f"{pairs[i][0]}\t{pairs[i][1]}\n" for i in sorted(chosen))
    settings = dict(model=s.model, pairs=pair_file, data_path=run.data_path, cycles=s.cycles,
                    train_epochs=s.bi_epochs, seed=run.seed, artifacts_dir=run.artifacts_dir,
                    eval_each_epoch=False, checkpoint_every=10_000, log_every=10)
    if s.mutual_init:
        settings["mutual_init"] = s.mutual_init
    config = build_config("trans_encoder", settings)
    if s.resume:
        # As `train.py --resume=<ID>`: the run's saved settings (which hold the phase budgets it resolved).
        saved = load_run_config(run.artifacts_dir, s.resume)
        config = dataclasses.replace(saved, run=dataclasses.replace(saved.run, resume=s.resume))
    start = time.time()
    trained = train(config, evaluator=StsbDevEvaluator(run.data_path, progress=False))
    train_seconds = round(time.time() - start, 1)
    config = trained["config"]

    context = RunContext(config, tf.distribute.get_strategy(),
                         RunPaths.for_run(run.artifacts_dir, trained["run_id"]), chief=True)
    models, team = _Models(context, PhaseRunner(context)), members(config)
    rows: Dict[str, List[float]] = {}
    results: Dict[str, Any] = {}
    partial = os.path.join(run.artifacts_dir, f"ablation_trans_encoder{'_mutual' if s.mutual_init else ''}.json")
    print(f"training: {train_seconds} s; STS-B dev per phase and cycle: {trained['run_id']}'s config.json", flush=True)
    print(STS_COLUMNS, flush=True)

    def report(name, result):
        results[name] = result
        rows[name] = [*headline_numbers(result), result["avg"], result["stsb"]["dev"]]
        print(f"| {name} | " + " | ".join(f"{x:.2f}" for x in rows[name]) + " |", flush=True)
        # After every model, so that a time-limited run keeps what it measured.
        with open(partial, "w") as f:
            json.dump({"settings": dataclasses.asdict(s), "run_id": trained["run_id"], "train_seconds": train_seconds,
                       "results": results}, f, indent=2)

    def bi(name, model):
        embed = embed_fn_of(model)
        report(name, evaluate_sts(lambda x: embed_sentences(embed, x, 128, progress=False), run.data_path))

    def cross(name, cycle):
        fns = [pair_fn_of(models.get("cross", m, cycle)) for m in team]
        score = lambda a, b: np.mean([score_sentence_pairs(fn, a, b, 128, progress=False) for fn in fns], 0)  # noqa
        report(name, evaluate_sts_pairs(score, run.data_path))

    for m in team:
        bi(f"start bi-encoder {m} ({s.model if m == 'a' else s.mutual_init})", models.get("bi", m, 0))
    for cycle in range(1, s.cycles + 1):
        for m in team:
            bi(f"cycle {cycle} bi-encoder {m}", models.get("bi", m, cycle))
        cross(f"cycle {cycle} cross-encoder{' ensemble' if len(team) > 1 else ''}", cycle)
    setting = [f"Setting: Trans-Encoder from {s.model}{' + ' + s.mutual_init if s.mutual_init else ''}: "
               f"{len(chosen)} sts_sickr pairs (seeded sample), {s.cycles} cycle(s), cross 1 epoch batch 32, bi "
               f"{s.bi_epochs} epoch(s) batch 128, seed {run.seed}; training {train_seconds} s (run "
               f"{trained['run_id']}; STS-B dev per phase and cycle in its config.json)"]
    body = ["Seven STS sets (STS12-16 \"all\", STS-B test, SICK-R test; Spearman x100) and STS-B dev:", "",
            STS_COLUMNS, "| --- " * 10 + "|"]
    body += [f"| {name} | " + " | ".join(f"{x:.2f}" for x in row) + " |" for name, row in rows.items()]
    return (f"Trans-Encoder from {s.model}", setting, body,
            {"run_id": trained["run_id"], "train_seconds": train_seconds, "results": results})


RUNNERS = {"pause": pause, "declutr": declutr, "simcse": simcse, "trans_encoder": trans_encoder}


def main(argv):
    if FLAGS.method is None:
        raise UserError(f"--method is required: one of {', '.join(METHODS)}.")
    given = {name: FLAGS[name].value for name in setting_fields() if FLAGS[name].present}
    settings = settings_for(FLAGS.method, given)
    run = Run(data_path=FLAGS.data_path, artifacts_dir=FLAGS.artifacts_dir, seed=FLAGS.seed)
    load = harness.Load()
    report = RUNNERS[FLAGS.method](settings, run)
    if report is None:
        return 0
    title, setting, body, data = report
    results_dir = FLAGS.results_dir or default_results_dir(FLAGS.method, settings)
    data = {"method": FLAGS.method, "settings": dataclasses.asdict(settings), "run": dataclasses.asdict(run), **data}
    print(harness.write_page(results_dir, title, MODULE, body, data, load, setting))
    return 0


if __name__ == "__main__":
    define_flags()
    cli.run(main)
