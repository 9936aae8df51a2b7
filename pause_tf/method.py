"""PAUSE as a registered method: its model, its data, its defaults."""

from __future__ import annotations

import functools
import os

import numpy as np
import tensorflow as tf
from absl import logging

from common.data.fingerprint import fingerprint_rows
from common.data.nli import NliPairs, read_nli, read_nli_sources
from common.data.tables import parse_columns
from common.data.sampling import StreamSampler, batches_dataset
from common.data.sources import resolve_sources
from common.data.sts import load_stsb
from common.data.synthetic import write_nli_jsonl
from common.errors import UserError
from common.notices import notice
from common.models.encoder import build_encoder
from common.models.encoder_config import encoder_config
from common.models.tokenization import truncated_sentences
from common.training import registry
from common.training.config import TrainConfig
from common.training.publishing import pretrained_weights_prefix
from pause_tf.config import DEFAULTS, POS_SAMPLE_PREC_LABELLED_ONLY, PauseOptions
from pause_tf.model import PauseModel, StsbModel
from pause_tf.pu_data import check_labels, estimate_priors, pu_batches, pu_split


def _restore_pretrained(model, config: TrainConfig) -> None:
    options = config.options
    prefix, saved = pretrained_weights_prefix(options.pretrained_weights, config.run.artifacts_dir)
    try:
        # The siamese trunk only: an STS-B regressor would be new.
        trunk = tf.train.Checkpoint(encoder=model.encoder, hidden=model.hidden, classifier=model.classifier)
        tf.train.Checkpoint(model=trunk).read(prefix).expect_partial().assert_existing_objects_matched()
    except (ValueError, AssertionError, tf.errors.InvalidArgumentError) as e:
        raise UserError(
            f"--pretrained_weights={options.pretrained_weights}: its encoder is {saved['encoder']['spec']!r} and "
            f"does not fit --model={config.encoder.model!r} (a model of another size?). Use the same --model as the "
            f"pretrained run. Details: {str(e).splitlines()[0][:300]}"
        ) from None
    logging.info("Loaded pretrained weights from %s.", prefix)


def build_model(config: TrainConfig):
    if config.options.task == "nli" and not config.options.priors:
        config = resolve(config)  # a config built without the method's resolve (library use)
    options = config.options
    encoder = build_encoder(encoder_config(config, pooling=options.pooling))
    head = dict(num_classes=options.classes, hidden_units=options.hidden_units, name="pause")
    if options.task == "nli":
        model = PauseModel(encoder, prior=options.priors, total_steps=config.total_steps,
                           annealing=options.annealing, anneal_power=options.anneal_power,
                           steps_per_epoch=config.run.train_steps_per_epoch,
                           batch_without_labels=options.batch_without_labels, **head)
    else:
        model = StsbModel(encoder, objective=options.stsb_objective, **head)
    example = tf.constant(["a sentence", "another one"])
    model({"premise": example, "hypothesis": example})
    if options.pretrained_weights:
        _restore_pretrained(model, config)
    return model


@functools.lru_cache(maxsize=2)
def _read_pairs(train_data, data_path: str, columns, labels, unlabeled_data) -> tuple:
    """(the training pairs, the --unlabeled_data pairs), read once per process."""
    mapping = parse_columns(columns)
    pairs = read_nli_sources(resolve_sources(train_data, data_path), data_path, mapping, labels)
    extra = [read_nli(s, data_path, mapping, labels, with_labels=False)
             for s in resolve_sources(unlabeled_data, data_path)]
    return pairs, NliPairs.concat(extra) if extra else None


def _pairs(config: TrainConfig):
    run, options = config.run, config.options
    return _read_pairs(run.train_data, run.data_path, options.columns, options.label_names, options.unlabeled_data)


def resolve(config: TrainConfig) -> TrainConfig:
    """Fixes, for a new run, what depends on the data: --pos_sample_prec (100 when there are
    unlabelled pairs, else the paper's protocol) and the class priors (estimated from the
    labelled pairs unless given)."""
    options = config.options
    if options.task != "nli":
        return config
    pairs, extra = _pairs(config)
    priors_given = options.prior is not None or bool(options.class_priors)
    check_labels(pairs, options.label_names, config.run.train_data, priors_given)
    changes = {}
    if options.pos_sample_prec is None:
        has_unlabelled = extra is not None or pairs.labelled < len(pairs)
        changes["pos_sample_prec"] = 100.0 if has_unlabelled else POS_SAMPLE_PREC_LABELLED_ONLY
    if options.prior is None and not options.class_priors:
        kept = pu_split(pairs.labels, changes.get("pos_sample_prec", options.pos_sample_prec), config.run.seed)
        changes["class_priors"] = tuple(f"{p:.6g}" for p in estimate_priors(kept, options.classes))
    return config.replace(**changes) if changes else config


def data_summary(pairs: NliPairs, labels: np.ndarray, extra, names, priors, estimated: bool) -> str:
    """The one line a run prints about its pairs: labelled per class, unlabelled, dropped, priors."""
    per_class = np.bincount(labels[labels >= 0], minlength=len(names))
    hidden = pairs.labelled - int(per_class.sum())
    unlabelled = int((labels < 0).sum()) + (len(extra) if extra is not None else 0)
    parts = [f"data: {int(per_class.sum()):,} labelled ({'/'.join(f'{c:,}' for c in per_class)} "
             f"{'/'.join(names)}), {unlabelled:,} unlabelled"]
    notes = []
    if hidden:
        notes.append(f"{hidden:,} of them labelled pairs whose label was hidden (--pos_sample_prec)")
    if extra is not None:
        notes.append(f"{len(extra):,} from --unlabeled_data")
    if notes:
        parts[0] += f" ({'; '.join(notes)})"
    dropped = pairs.dropped + (extra.dropped if extra is not None else 0)
    if dropped:
        parts.append(f"{dropped:,} dropped (empty sentence)")
    how = "estimated from the labelled pairs" if estimated else "given"
    parts.append(f"class priors {'/'.join(f'{p:.3f}' for p in priors)} ({how})")
    return "; ".join(parts)


def make_data(config: TrainConfig, model):
    """Returns (make_dataset(start_step), statistics and fingerprint of the training data)."""
    options, run = config.options, config.run
    tokenizer = model.encoder.tokenizer

    def tokenize(first, second, target):
        return {"premise": tokenizer(first), "hypothesis": tokenizer(second)}, target

    if options.task == "nli":
        if options.pos_sample_prec is None or not options.priors:
            config = resolve(config)  # a config built without the method's resolve (library use)
            options = config.options
        pairs, extra = _pairs(config)
        labels = pu_split(pairs.labels, options.pos_sample_prec, run.seed)
        estimated = options.prior is None and options.class_priors == tuple(
            f"{p:.6g}" for p in estimate_priors(labels, options.classes))
        summary = data_summary(pairs, labels, extra, options.label_names, options.priors, estimated)
        fingerprint = pairs.fingerprint()
        if extra is not None:
            fingerprint = fingerprint_rows([fingerprint, extra.fingerprint()])
            pairs = NliPairs.concat([pairs, extra])
            labels = np.concatenate([labels, extra.labels])
        notice(summary)
        info = {**pairs.report(options.classes), "labelled": int((labels >= 0).sum()),
                "unlabelled": int((labels < 0).sum()), "labels": list(options.label_names),
                "class_priors": list(options.priors), "summary": summary,
                "truncated_sentences": truncated_sentences(tokenizer, pairs.premises, pairs.hypotheses),
                "fingerprint": fingerprint}

        def strings(start_step):
            return pu_batches(pairs, labels, run.batch_size, options.priors, run.seed, options.classes,
                              options.labeled_batch_fraction, start_step)
    else:
        stsb = load_stsb(run.data_path, "train")
        info = {"pairs": len(stsb),
                "truncated_sentences": truncated_sentences(tokenizer, stsb.sentences1, stsb.sentences2),
                "fingerprint": fingerprint_rows(zip(stsb.sentences1, stsb.sentences2, stsb.scores.tolist()))}
        sampler = StreamSampler([np.arange(len(stsb))], [1.0], run.batch_size, run.seed)

        def strings(start_step):
            columns = [stsb.sentences1, stsb.sentences2, stsb.scores.astype(np.float32)]
            return batches_dataset(sampler, columns, start_step)

    def make_dataset(start_step: int) -> tf.data.Dataset:
        return strings(start_step).map(tokenize, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)

    return make_dataset, info


def smoke(directory: str):
    return {"model": "random_tiny", "train_data": (write_nli_jsonl(os.path.join(directory, "nli.jsonl")),),
            "data_path": directory, "batch_size": 8, "max_seq_len": 16, "pos_sample_prec": 30.0}


METHOD = registry.register(registry.Method(
    name="pause",
    description="PAUSE: NLI pairs with a share of labels kept (cross-entropy + annealed nnPU), or STS-B "
                "fine-tuning (--task=stsb).",
    options=PauseOptions,
    build_model=build_model,
    make_data=make_data,
    smoke=smoke,
    defaults=DEFAULTS,
    resolve=resolve,
))
