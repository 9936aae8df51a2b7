"""Trans-Encoder as a registered method: a driver that runs its cycles as phases of one run.

A run with C cycles and M models (M = 2 with --mutual_init) trains, per cycle c,
the phases `cycle<c>_cross_<m>` (each cross-encoder on the mean of the bi-encoders'
cosine scores, every pair in both orders) and then `cycle<c>_bi_<m>` (each
bi-encoder on the mean of the cross-encoders' sigmoid scores), for m in a, b.
Every phase is one `run_training` under `common.training.phases.PhaseRunner`: its
own checkpoints, its pseudo-labels saved before it trains, its final weights and
evaluator's score (STS-B dev by default) recorded when it ends, so a run killed in any phase resumes there
and ends with the weights of an uninterrupted run. The artifact holds the
bi-encoder (`embedding/`) and the cross-encoder(s) (`cross/`) of the cycles with
the best evaluator score (the last cycle without an evaluator).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import math
import os
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf
from absl import logging

from common import artifacts
from common.data.fingerprint import fingerprint_rows
from common.data.sampling import StreamSampler, batches_dataset
from common.loading.embedding import embed_sentences, score_sentence_pairs
from common.evaluation.sts import cosine_scores
from common.models.encoder import EncoderConfig, SentenceEncoder, build_encoder, inference_encoder
from common.export.saved_model import export_cross_encoder, export_encoder
from common.training import registry
from common.training.config import OptimizerSection, TrainConfig
from common.training.loop import LoopConfig, Selection, weights_fingerprint
from common.training.phases import PhaseRunner
from common.training.publishing import write_weights
from common.training.runs import RunContext, RunOutcome, seeded
from common.training.schedules import make_optimizer
from trans_encoder_tf.config import DEFAULTS, TransEncoderOptions
from common.data.tables import parse_columns
from trans_encoder_tf.data import load_pairs
from trans_encoder_tf.model import BiEncoderModel, CrossEncoderModel

KINDS = ("cross", "bi")
MEMBERS = ("a", "b")
LABEL_BATCH_SIZE = 128
DEV_KEY = "stsb_dev_spearman"  # the primary metric of train.py's default evaluator (STS-B dev)


def dev_key(evaluator) -> str:
    """The metric phases are selected and cycles chosen on: the evaluator's primary metric."""
    return evaluator.primary_metric if evaluator is not None else DEV_KEY


def better(evaluator) -> bool:
    """Whether a higher score is better (the evaluator's `greater_is_better`; STS-B dev without one)."""
    return evaluator.greater_is_better if evaluator is not None else True


# === The models and their starts ===

def members(config: TrainConfig) -> Tuple[str, ...]:
    """"a", plus "b" for mutual distillation."""
    return MEMBERS if config.options.mutual_init else MEMBERS[:1]


def start_spec(config: TrainConfig, kind: str, member: str) -> str:
    options = config.options
    bi = config.encoder.model if member == "a" else options.mutual_init
    if kind == "bi":
        return bi
    return (options.cross_init if member == "a" else options.mutual_cross_init) or bi




def build_start_encoder(spec: str, max_seq_len: int, config: TrainConfig) -> SentenceEncoder:
    """The encoder a spec, run ID or artifact directory names (`common.models.sources`), at `max_seq_len`."""
    enc = config.encoder
    spec = artifacts.model_path(spec, config.run.artifacts_dir) or spec
    return build_encoder(EncoderConfig(spec=spec, max_seq_len=max_seq_len, pad_to_multiple_of=enc.pad_to_multiple_of,
                                       dropout=enc.dropout, seed=config.run.seed, precision=enc.precision))


def build_phase_model(config: TrainConfig, kind: str, member: str = "a"):
    """A fresh model of `kind` ("cross" or "bi") from its start (call inside the strategy's scope)."""
    max_len = config.options.cross_max_seq_len if kind == "cross" else config.encoder.max_seq_len
    encoder = build_start_encoder(start_spec(config, kind, member), max_len, config)
    if kind == "cross":
        return CrossEncoderModel(encoder, name=f"cross_encoder_{member}")
    return BiEncoderModel(encoder, name=f"bi_encoder_{member}")


def optimizer_section(config: TrainConfig, kind: str) -> OptimizerSection:
    """The bi-encoder phases use the optimizer section; the cross-encoder phases their `cross_*` settings."""
    if kind == "bi":
        return config.optimizer
    o = config.options
    return dataclasses.replace(config.optimizer, train_lr=o.cross_lr, weight_decay=o.cross_weight_decay,
                               warmup_fraction=o.cross_warmup_fraction)


def compiled_phase_model(config: TrainConfig, strategy, kind: str, member: str, total_steps: int):
    with strategy.scope(), seeded(config.run.seed):
        model = build_phase_model(config, kind, member)
        optimizer = optimizer_section(config, kind)
        model.clip_norm = optimizer.clip_norm or None
        model.compile(optimizer=make_optimizer(optimizer, total_steps), jit_compile=False)
    return model


# === Data: pairs, labels, batches ===

@functools.lru_cache(maxsize=2)
def _pairs(source: str, data_path: str, columns):
    pairs, overlap = load_pairs(source, data_path, parse_columns(columns))
    return tuple(p[0] for p in pairs), tuple(p[1] for p in pairs), overlap


def pairs_of(config: TrainConfig):
    """(first sentences, second sentences, evaluation sets they overlap)."""
    return _pairs(config.options.pairs, config.run.data_path, config.options.columns)


def phase_loop(config: TrainConfig, kind: str, n_pairs: int) -> LoopConfig:
    """Steps of a phase: its epochs of one pass over the pairs (both orders for the
    cross-encoder), each capped at `train_steps_per_epoch` when that is given."""
    run, options = config.run, config.options
    examples, batch, epochs = ((2 * n_pairs, options.cross_batch_size, options.cross_epochs) if kind == "cross"
                               else (n_pairs, run.batch_size, run.train_epochs))
    steps = math.ceil(examples / batch)
    if run.train_steps_per_epoch:
        steps = min(steps, run.train_steps_per_epoch)
    return LoopConfig(total_steps=epochs * steps, steps_per_epoch=steps, checkpoint_every=run.checkpoint_every,
                      log_every=run.log_every, evaluate_every=options.evaluation_steps)


def phase_evaluation(config: TrainConfig, ctx: RunContext, loop: LoopConfig, scorer: "DevScorer"):
    """(loop, evaluate, selection) of a phase: with `best_in_phase` and an evaluator, its score
    every `evaluation_steps` steps and at epoch ends selects the phase's weights; otherwise the
    epoch ends are scored when `eval_each_epoch` (the last step once the phase ends)."""
    if config.options.best_in_phase and ctx.evaluator is not None:
        # Every worker scores (deterministically), and run_training hands all the chief's score.
        return loop, lambda step: scorer(ctx.evaluator)[0], Selection(dev_key(ctx.evaluator),
                                                                      better(ctx.evaluator))
    evaluator = ctx.evaluator if ctx.chief else None
    loop = dataclasses.replace(loop, evaluate_every=0, evaluate_epoch_ends=config.run.eval_each_epoch)
    return loop, lambda step: scorer(evaluator)[0] if step < loop.total_steps else {}, None


def phase_dataset(config: TrainConfig, model, kind: str, sentences1, sentences2, labels, seed: int):
    """make_dataset(start_step) of a phase: seeded batches of labelled pairs (cross: both orders)."""
    s1, s2, y = np.asarray(sentences1, object), np.asarray(sentences2, object), np.asarray(labels, np.float32)
    if kind == "cross":
        s1, s2, y = np.concatenate([s1, s2]), np.concatenate([s2, s1]), np.concatenate([y, y])
        batch = config.options.cross_batch_size
    else:
        batch = config.run.batch_size
    sampler = StreamSampler([np.arange(len(y))], [1.0], batch, seed)
    tokenizer = model.encoder.tokenizer
    if kind == "cross":
        truncated = tokenizer.count_truncated_pairs(s1, s2)
        what = f"pairs (both orders) are longer than --cross_max_seq_len={tokenizer.config.max_seq_len}"
    else:
        truncated = tokenizer.count_truncated(s1) + tokenizer.count_truncated(s2)
        what = f"sentences are longer than --max_seq_len={tokenizer.config.max_seq_len}"
    logging.info("%s phase: %d of %d %s tokens and are truncated.", kind, truncated,
                 len(y) if kind == "cross" else 2 * len(y), what)

    def to_inputs(a, b, label):
        if kind == "cross":
            return {"tokens": tokenizer.tokenize_pairs(a, b), "label": label}
        return {"sentence1": tokenizer(a), "sentence2": tokenizer(b), "label": label}

    def make_dataset(start_step: int) -> tf.data.Dataset:
        ds = batches_dataset(sampler, [s1, s2, y], start_step)
        return ds.map(to_inputs, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)

    return make_dataset


def embed_fn_of(model) -> callable:
    return model.encoder.embedding_function()


def pair_fn_of(model) -> callable:
    spec = tf.TensorSpec([None], tf.string)
    fn = tf.function(lambda a, b: model({"sentence1": a, "sentence2": b}, training=False)["score"],
                     input_signature=[spec, spec])
    # What `score_sentence_pairs` sorts its batches by.
    fn.token_counts = tf.function(model.encoder.tokenizer.pair_token_counts, input_signature=[spec, spec])
    return fn


def scores_of(model, kind: str, sentences1: Sequence[str], sentences2: Sequence[str]) -> np.ndarray:
    """A model's score of each pair: a bi-encoder's cosine, a cross-encoder's sigmoid (one order)."""
    if kind == "cross":
        return score_sentence_pairs(pair_fn_of(model), list(sentences1), list(sentences2), LABEL_BATCH_SIZE,
                                    progress=False, desc="labelling")
    unique = sorted(set(sentences1) | set(sentences2))
    vectors = embed_sentences(embed_fn_of(model), unique, LABEL_BATCH_SIZE, progress=False, desc="labelling")
    index = {s: i for i, s in enumerate(unique)}
    return cosine_scores(vectors[[index[s] for s in sentences1]],
                         vectors[[index[s] for s in sentences2]]).astype(np.float32)


def _first_phase_data(config: TrainConfig, model, kind: str):
    """The data of a run's first phase of `kind`, labelled by fresh models of the other kind
    (the replica check's batches)."""
    s1, s2, _ = pairs_of(config)
    source = "bi" if kind == "cross" else "cross"
    with seeded(config.run.seed):
        labels = np.mean([scores_of(build_phase_model(config, source, m), source, s1, s2)
                          for m in members(config)], axis=0)
    info = {"pairs": len(s1), "fingerprint": fingerprint_rows(zip(s1, s2))}
    return phase_dataset(config, model, kind, s1, s2, labels, config.run.seed), info


# === The driver ===

def phase_name(cycle: int, kind: str, member: str) -> str:
    return f"cycle{cycle}_{kind}_{member}"


class _Models:
    """The latest finished model of each (kind, member), restored from its phase when needed."""

    def __init__(self, ctx: RunContext, runner: PhaseRunner):
        self.ctx, self.runner = ctx, runner
        self.cache: Dict[Tuple[str, str], Tuple[int, object]] = {}

    def put(self, kind: str, member: str, cycle: int, model) -> None:
        self.cache[(kind, member)] = (cycle, model)

    def get(self, kind: str, member: str, cycle: int):
        """The model of `kind` trained in `cycle` (cycle 0: the start)."""
        cached = self.cache.get((kind, member))
        if cached is not None and cached[0] == cycle:
            return cached[1]
        with self.ctx.strategy.scope(), seeded(self.ctx.config.run.seed):
            model = build_phase_model(self.ctx.config, kind, member)
        if cycle > 0:
            self.runner.restore(phase_name(cycle, kind, member), model.weights_checkpoint())
        self.put(kind, member, cycle, model)
        return model


class DevScorer:
    """STS-B dev of one model, as often as it is asked for: its embedding (bi) or pair-scoring
    (cross) function is traced on the first call and reused, as a phase scores its model at
    each evaluation and once more when it ends (a new trace each time cost a two-cycle tiny run
    about 3 s of 27 on a 2-core CPU)."""

    def __init__(self, model, kind: str):
        self.model, self.kind, self.fn = model, kind, None

    def __call__(self, evaluator) -> Tuple[Dict[str, float], Optional[np.ndarray]]:
        """({metric: value}, the cross-encoder's dev predictions or None); ({}, None) without an evaluator."""
        if evaluator is None or (self.kind == "cross" and not evaluator.scores_cross_encoders):
            return {}, None
        if self.fn is None:
            # The bi-encoder at the length it is published and used at, not the one it labels and trains at.
            self.fn = (self.model.encoder.with_length().embedding_function() if self.kind == "bi"
                       else pair_fn_of(self.model))
        if self.kind == "bi":
            return evaluator(self.fn), None
        predictions = evaluator.pair_predictions(self.fn)
        return evaluator.metrics_of(predictions), predictions


def driver(ctx: RunContext) -> RunOutcome:
    """Runs every phase of a Trans-Encoder run (resuming the first unfinished one) and
    returns what to publish."""
    config, runner = ctx.config, PhaseRunner(ctx)
    evaluator = ctx.evaluator if ctx.chief else None
    s1, s2, overlap = pairs_of(config)
    data_info = {"pairs": len(s1), "source": config.options.pairs, "fingerprint": fingerprint_rows(zip(s1, s2))}
    logging.info("Trans-Encoder pairs: %s", data_info)
    models, team = _Models(ctx, runner), members(config)
    phases: List[Dict] = []
    start: Dict[str, float] = {}  # STS-B dev of the starting bi-encoders
    if evaluator is not None:
        for m in team:
            start[f"bi_{m}"] = DevScorer(models.get("bi", m, 0), "bi")(evaluator)[0].get(dev_key(evaluator))
    index = 0
    for cycle in range(1, config.options.cycles + 1):
        for kind in KINDS:
            source = "bi" if kind == "cross" else "cross"
            source_cycle = cycle - 1 if kind == "cross" else cycle
            for m in team:
                index += 1
                name = phase_name(cycle, kind, m)
                if runner.record(name) is not None:
                    phases.append(runner.skip(name))
                    continue
                labels = runner.load_array(name, "labels")
                if labels is None:
                    # Mutual distillation: every model learns from the mean of both models' scores.
                    labels = np.mean([scores_of(models.get(source, mm, source_cycle), source, s1, s2)
                                      for mm in team], axis=0).astype(np.float32)
                    runner.save_array(name, "labels", labels)
                loop = phase_loop(config, kind, len(s1))
                model = compiled_phase_model(config, ctx.strategy, kind, m, loop.total_steps)
                if cycle > 1 and not config.options.init_with_new_models:
                    runner.restore(phase_name(cycle - 1, kind, m), model.weights_checkpoint())
                make_dataset = phase_dataset(config, model, kind, s1, s2, labels, config.run.seed + index)

                scorer = DevScorer(model, kind)
                metrics = runner.train(name, model, make_dataset, *phase_evaluation(config, ctx, loop, scorer))
                scores, predictions = scorer(evaluator)
                if predictions is not None:
                    runner.save_array(name, "dev_predictions", predictions)
                record = {"phase": name, "cycle": cycle, "kind": kind, "member": m, **scores,
                          "label_mean": float(np.mean(labels)), "label_std": float(np.std(labels)),
                          "metrics": {k: v for k, v in metrics.items() if k not in scores}}
                logging.info("Phase %s done: %s", name, scores)
                runner.complete(name, model.weights_checkpoint(), loop.total_steps, record)
                phases.append({**record, "steps": loop.total_steps})
                models.put(kind, m, cycle, model)
    return _outcome(ctx, runner, models, phases, start, data_info, overlap)


def _cycle_scores(runner: PhaseRunner, evaluator, phases: List[Dict], team) -> List[Dict]:
    """The evaluator's primary metric per cycle: each bi-encoder, and the cross-encoder (ensemble: mean of
    predictions)."""
    key = dev_key(evaluator)
    cycles = []
    for cycle in sorted({p["cycle"] for p in phases}):
        row = {"cycle": cycle}
        for p in phases:
            if p["cycle"] == cycle and key in p:
                row[f"{p['kind']}_{p['member']}"] = p[key]
        if len(team) > 1 and evaluator is not None and evaluator.scores_cross_encoders:
            predictions = [runner.load_array(phase_name(cycle, "cross", m), "dev_predictions") for m in team]
            if all(p is not None for p in predictions):
                row["cross_ensemble"] = evaluator.metrics_of(np.mean(predictions, axis=0)).get(key)
        cycles.append(row)
    return cycles


def _outcome(ctx, runner, models, phases, start, data_info, overlap) -> RunOutcome:
    config, team = ctx.config, members(ctx.config)
    evaluator = ctx.evaluator if ctx.chief else None
    cycles = _cycle_scores(runner, evaluator, phases, team)
    last = config.options.cycles
    cross_key = "cross_ensemble" if len(team) > 1 else "cross_a"

    def best(key):
        scored = [(row[key], row["cycle"]) for row in cycles if row.get(key) is not None]
        if not scored:
            return last
        return (max if better(evaluator) else min)(scored)[1]

    best_bi, best_cross = best("bi_a"), best(cross_key)
    bis = {m: models.get("bi", m, best_bi) for m in team}
    crosses = {m: models.get("cross", m, best_cross) for m in team}
    metrics = {"step": runner.offset}
    row = {r["cycle"]: r for r in cycles}
    key = dev_key(evaluator)
    if row[best_bi].get("bi_a") is not None:
        metrics[key] = row[best_bi]["bi_a"]
    if row[best_cross].get(cross_key) is not None:
        metrics[f"cross_{key}"] = row[best_cross][cross_key]
    layers = {}
    for m in team:
        suffix = "" if m == "a" else f"_{m}"
        layers[f"bi_encoder{suffix}"] = tf.train.Checkpoint(**bis[m].published_layers())
        layers[f"cross_encoder{suffix}"] = tf.train.Checkpoint(**crosses[m].published_layers())
    digest = hashlib.sha256("".join(weights_fingerprint(x) for x in [*bis.values(), *crosses.values()]).encode())

    def write_models(tmp: str) -> None:
        export_encoder(inference_encoder(bis["a"].encoder), artifacts.join(tmp, "embedding"))
        export_cross_encoder(list(crosses.values()), artifacts.join(tmp, "cross"))
        write_weights(tf.train.Checkpoint(model=tf.train.Checkpoint(**layers)), tmp)

    record = {
        "encoder": dataclasses.asdict(bis["a"].encoder.encoder_config),
        "cross_encoder": dataclasses.asdict(crosses["a"].encoder.encoder_config),
        "artifacts": {"embedding": f"bi-encoder {phase_name(best_bi, 'bi', 'a')} (test_sts.py --mode=bi)",
                      "cross": f"cross-encoder {', '.join(phase_name(best_cross, 'cross', m) for m in team)}"
                               f"{' (mean of scores)' if len(team) > 1 else ''} (test_sts.py --mode=cross)"},
        "best_cycle": {"bi": best_bi, "cross": best_cross},
        "start": start,
        "cycles": cycles,
        "phases": phases,
    }
    return RunOutcome(metrics, data_info, digest.hexdigest()[:16], write_models, record, overlap)


# === Registration ===

def resolve(config: TrainConfig) -> TrainConfig:
    """`train_steps_per_epoch` 0 (no cap) becomes the longest phase's pass over the pairs,
    so that every phase runs whole epochs (`phase_loop` caps each at its own pass)."""
    if config.run.train_steps_per_epoch:
        return config
    n = len(pairs_of(config)[0])
    longest = max(math.ceil(2 * n / config.options.cross_batch_size), math.ceil(n / config.run.batch_size))
    return config.replace(train_steps_per_epoch=max(1, longest))


def build_model(config: TrainConfig):
    """The first phase's model: cross-encoder a (the replica check trains one step of it)."""
    return build_phase_model(config, "cross", "a")


def make_data(config: TrainConfig, model):
    return _first_phase_data(config, model, "cross")


def smoke(directory: str):
    path = os.path.join(directory, "pairs.tsv")
    os.makedirs(directory, exist_ok=True)
    nouns, verbs = ("man", "woman", "dog", "child", "cat", "chef"), ("runs", "sleeps", "eats", "sings")
    with open(path, "w", encoding="utf-8") as f:
        for i in range(12):
            a = f"a {nouns[i % 6]} {verbs[i % 4]} in the park ."
            b = f"the {nouns[(i * 5) % 6]} {verbs[(i + i // 6) % 4]} near a tree ."
            f.write(f"{a}\t{b}\n")
    return {"model": "random_tiny", "pairs": path, "data_path": directory, "batch_size": 4, "cross_batch_size": 4,
            "max_seq_len": 16, "cross_max_seq_len": 24, "cycles": 1}


METHOD = registry.register(registry.Method(
    name="trans_encoder",
    description="Trans-Encoder: a bi-encoder and a cross-encoder teach each other on unlabelled pairs, in cycles.",
    options=TransEncoderOptions,
    build_model=build_model,
    make_data=make_data,
    smoke=smoke,
    defaults=DEFAULTS,
    resolve=resolve,
    driver=driver,
    phase_models={"cross": (build_model, make_data),
                  "bi": (lambda config: build_phase_model(config, "bi", "a"),
                         lambda config, model: _first_phase_data(config, model, "bi"))},
))
