"""Typed, nested run configurations; the command line is generated from them.

A training run is a `TrainConfig`: the method's name and four sections,
    run        what data, how long, where artifacts go (`RunSection`)
    encoder    which pretrained encoder and how it tokenizes (`EncoderSection`)
    optimizer  learning-rate schedule, weight decay, gradient clip (`OptimizerSection`)
    options    the method's own hyperparameters (its registered dataclass).
Every field is a flag of the same name (`option(flag=...)` renames one), so each
default is written once: in the section class, or in a method's registration
where the method's default differs (`common.training.registry.Method`).
`TrainConfig.to_dict` is what `config.json` records.
"""

from __future__ import annotations

import dataclasses
import math
import typing
from typing import Any, Dict, Optional, Tuple

from common.data.sts import DEV_TASKS
from common.errors import UserError
from common.settings import option
from common.models.sources.names import canonical_spec
from common.models.precision import DEFAULT_PRECISION, PRECISION_HELP, check_precision
from common.training.distribute import STRATEGIES

# OptimizerSection.lr_decay_from: where the learning-rate decay starts.
LR_DECAY_FROM = ("warmup_end", "start")


def columns_option():
    """`--columns`, for every method that reads tables (defined once, used by each such method)."""
    return option((), "Map the toolkit's fields to the training files' columns: field:column,... (e.g. "
                      "premise:sentence_a,hypothesis:sentence_b,label:relation). Default: the field's own name, or "
                      "the official NLI files' sentence1, sentence2, gold_label.")


def labels_option():
    """`--labels`, for every method that reads class labels."""
    return option((), "Label names in class-id order, e.g. paraphrase,other (K = their number). A cell may also "
                      "hold a class id 0..K-1; empty, '-' or -1 means unlabelled. Default: "
                      "entailment,neutral,contradiction.")


def flag_name(field: dataclasses.Field) -> str:
    return field.metadata.get("flag") or field.name


def field_types(cls) -> Dict[str, Any]:
    """Resolved annotations of a config dataclass (they are strings under postponed evaluation)."""
    return typing.get_type_hints(cls)


def check_field(section: Any, field: dataclasses.Field) -> None:
    """Raises UserError when a value breaks its field's choices or lower bound."""
    value = getattr(section, field.name)
    name = flag_name(field)
    choices = field.metadata.get("choices")
    if choices and value not in choices:
        raise UserError(f"--{name} must be one of {', '.join(choices)}; got {value!r}.")
    bound = field.metadata.get("lower_bound")
    if bound is not None and value is not None and not value >= bound:
        raise UserError(f"--{name} must be >= {bound}; got {value}.")


def check_section(section: Any) -> None:
    for field in dataclasses.fields(section):
        check_field(section, field)


@dataclasses.dataclass(frozen=True)
class RunSection:
    """What a run trains on, for how long, and where it writes."""

    data_path: str = option("data", "Data root in SentEval's layout (<root>/downstream/STS/...); relative "
                                    "--train_data paths are under it.")
    train_data: Tuple[str, ...] = option((), "Training data: files, directories or named sources (see the method).")
    batch_size: int = option(32, "Global batch size (what one example is depends on the method).", lower_bound=1)
    train_epochs: int = option(1, "Epochs of --train_steps_per_epoch steps.", lower_bound=1)
    train_steps_per_epoch: int = option(500, "Optimizer steps per epoch (the evaluation interval).", lower_bound=1)
    seed: int = option(0, "Seed of data order, label split, span sampling, initialisation and dropout.")
    strategy: str = option("auto", "tf.distribute strategy.", choices=STRATEGIES)
    tpu: str = option("", "TPU name or address for --strategy=tpu.")
    artifacts_dir: str = option("artifacts", "Root of model/, log/, ckpt/ and test/.")
    log_dir: str = option("", "TensorBoard directory; default <artifacts_dir>/log/<ID>.")
    model_dir: str = option("", "Final model directory; default <artifacts_dir>/model/<ID>.")
    resume: str = option("", "Run ID of an interrupted run to continue from its last checkpoint "
                             "(its saved settings are used).")
    checkpoint_every: int = option(500, "Steps between checkpoints.", lower_bound=1)
    log_every: int = option(50, "Steps between log lines and TensorBoard scalars.", lower_bound=1)
    eval_each_epoch: bool = option(True, "Run the evaluator (STS-B dev Spearman) at the end of each epoch.")
    eval_every: int = option(0, "Also evaluate every this many steps (the official SimCSE: 125): the run's evaluator "
                                "(train.py's: STS-B dev Spearman x100, stsb_dev_spearman) and a method's held-out "
                                "scores (mlm: heldout_loss, heldout_accuracy), logged as eval/<metric>. 0: at epoch "
                                "ends only (--eval_each_epoch). A resumed run may change it. Trans-Encoder: "
                                "--evaluation_steps.", lower_bound=0)
    publish_best: bool = option(False, "Publish the weights of the evaluation that scored best on --best_metric "
                                       "(as the official SimCSE keeps its best STS-B dev checkpoint) instead of the "
                                       "last step's; the last step is evaluated too, and config.json's selection "
                                       "records the chosen step and score and the last step's score. Needs "
                                       "evaluations (--eval_every or --eval_each_epoch) and, for "
                                       "stsb_dev_spearman, STS-B dev under --data_path. Fixed for the run's "
                                       "life (--resume keeps it). Trans-Encoder: --best_in_phase.")
    best_metric: str = option("", "What --publish_best selects on: stsb_dev_spearman (STS-B dev Spearman x100 of "
                                  "train.py's evaluator; higher is better), heldout_loss (lower is better) or "
                                  "heldout_accuracy (methods with held-out data: mlm). Default: heldout_loss for a "
                                  "method with held-out data, else stsb_dev_spearman.")
    dev_data: str = option("", "Your own held-out data to evaluate on (--eval_every, epoch ends) and select on "
                               "(--publish_best) instead of STS-B dev: a pair file (CSV, TSV, JSONL or Parquet; "
                               "sentence1, sentence2 and a similarity score or a 0/1 label) or a BEIR folder "
                               "(corpus.jsonl, queries.jsonl, qrels/dev.tsv). Its primary metric: dev_spearman, "
                               "dev_average_precision (0/1 labels) or dev_ndcg_at_10.")
    dev_task: str = option("auto", "What --dev_data holds: auto (a folder is retrieval; labels that are all 0 or 1 "
                                   "are binary; other numbers are scores), scored, binary or retrieval.",
                           choices=DEV_TASKS)
    dev_columns: Tuple[str, ...] = option((), "--dev_data: map sentence1, sentence2 and score (or label, "
                                              "its other name) to the file's columns, field:column,... (e.g. "
                                              "label:Quality), as test_sts.py --columns does.")

    @property
    def total_steps(self) -> int:
        return self.train_epochs * self.train_steps_per_epoch


@dataclasses.dataclass(frozen=True)
class EncoderSection:
    """The pretrained encoder a run starts from."""

    model: str = option("minilm", "Encoder spec: minilm, tfhub_bert_small, tfhub_bert_base (pretrained), "
                                  "random_bert_tiny ... random_bert_base (fresh, no pretraining), a run ID, a TF "
                                  "Hub URL, a Hugging Face BERT or RoBERTa directory or a TF-Hub-format BERT "
                                  "SavedModel.")
    max_seq_len: int = option(128, "Truncation length in tokens while training, [CLS] and [SEP] included "
                                   "(the published model truncates at the model's own maximum).", lower_bound=2)
    pad_to_multiple_of: int = option(1, "Round batch lengths up to a multiple (use --max_seq_len on TPU).",
                                     lower_bound=1)
    dropout: Optional[float] = option(None, "Dropout rate of the encoder; default: the architecture's own (e.g. "
                                            "0.1), never that of the run a --model artifact trained.",
                                      lower_bound=0.0)
    # A string flag checked in `validate` rather than an enum flag: absl rejects a bad enum
    # value itself, in two lines with exit code 1, instead of this toolkit's one line and 2.
    precision: str = option(DEFAULT_PRECISION, PRECISION_HELP + " One of fp32, bf16, fp16.")

    def __post_init__(self):
        # An old spelling of a spec ("bert_tiny") is recorded, and compared on --resume, under its new name.
        object.__setattr__(self, "model", canonical_spec(self.model))


@dataclasses.dataclass(frozen=True)
class OptimizerSection:
    """Adam (AdamW when weight decay > 0) with linear warm-up and polynomial decay."""

    train_lr: float = option(5e-5, "Peak learning rate.")
    end_lr: float = option(0.0, "Learning rate at the last step.", lower_bound=0.0)
    warmup_fraction: float = option(0.0, "Share of the steps spent warming the learning rate up from 0.",
                                    lower_bound=0.0)
    weight_decay: float = option(0.0, "Decoupled weight decay (AdamW; biases and LayerNorm excluded).",
                                 lower_bound=0.0)
    clip_norm: float = option(0.0, "Clip the global-batch gradient to this global norm (0: no clip).",
                              lower_bound=0.0)
    lr_decay_from: str = option("warmup_end", "Where the decay to --end_lr starts: warmup_end (continuous), or "
                                              "start: computed over every step from step 0, so the rate drops at "
                                              "the end of warm-up, as the original PAUSE code and BERT's "
                                              "optimization.py.", choices=LR_DECAY_FROM)

    def warmup_steps(self, total_steps: int) -> int:
        return int(self.warmup_fraction * total_steps)


# What --best_metric may name, and whether higher is better: the STS-B dev score of the evaluator train.py
# passes (common.evaluation.StsbDevEvaluator), and the held-out scores of a method with held-out data
# (`MethodModel.validation_metrics`: "heldout_" + its metric).
STSB_DEV_METRIC = "stsb_dev_spearman"
HELDOUT_PREFIX = "heldout_"
BEST_METRICS: Dict[str, bool] = {STSB_DEV_METRIC: True, HELDOUT_PREFIX + "loss": False,
                                 HELDOUT_PREFIX + "accuracy": True}


SECTIONS: Dict[str, type] = {"run": RunSection, "encoder": EncoderSection, "optimizer": OptimizerSection}


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """Everything one training run depends on (written to run_config.json and config.json).

    Attributes:
        method: str. The registered method's name.
        run: RunSection.
        encoder: EncoderSection.
        optimizer: OptimizerSection.
        options: the method's own options dataclass.
    """

    method: str
    run: RunSection
    encoder: EncoderSection
    optimizer: OptimizerSection
    options: Any

    @property
    def total_steps(self) -> int:
        return self.run.total_steps

    def validate(self) -> None:
        """Checks every field's choices and bounds, then the method's own rules.

        Raises:
            UserError: naming the flag, what was expected and what was given.
        """
        for section in (self.run, self.encoder, self.optimizer, self.options):
            check_section(section)
        lr = self.optimizer.train_lr
        if not (math.isfinite(lr) and lr > 0):
            raise UserError(f"--train_lr must be a finite number > 0; got {lr}.")
        if self.optimizer.warmup_fraction >= 1:
            raise UserError(f"--warmup_fraction must be < 1; got {self.optimizer.warmup_fraction}.")
        if self.encoder.dropout is not None and not self.encoder.dropout < 1:
            raise UserError(f"--dropout must be in [0, 1); got {self.encoder.dropout}.")
        check_precision(self.encoder.precision)
        run = self.run
        # With --dev_data the evaluator's own metric names are checked when the run starts
        # (run_settings.check_evaluation).
        if run.best_metric and not run.dev_data and run.best_metric not in BEST_METRICS:
            raise UserError(f"--best_metric must be one of {', '.join(BEST_METRICS)}; got {run.best_metric!r}.")
        if run.best_metric and not run.publish_best:
            raise UserError(f"--best_metric={run.best_metric} chooses what --publish_best publishes; give "
                             "--publish_best too, or leave --best_metric out.")
        if run.publish_best and not (run.eval_every or run.eval_each_epoch):
            raise UserError("--publish_best chooses among the run's evaluations, and --noeval_each_epoch with "
                             "--eval_every=0 leaves only the last step; give --eval_every=<steps> or "
                             "--eval_each_epoch.")
        check = getattr(self.options, "validate", None)
        if check is not None:
            check(self)

    def replace(self, **flat: Any) -> "TrainConfig":
        """A copy with fields changed by their flat (flag) names, e.g. `replace(batch_size=8)`."""
        sections = {name: getattr(self, name) for name in ("run", "encoder", "optimizer", "options")}
        changes: Dict[str, Dict[str, Any]] = {}
        for name, value in flat.items():
            owner = _owner(sections, name)
            if owner is None:
                raise UserError(f"Method {self.method!r} has no setting --{name}.")
            section_name, field = owner
            changes.setdefault(section_name, {})[field.name] = _coerce(value, field_types(
                type(sections[section_name]))[field.name])
        updated = {k: dataclasses.replace(v, **changes[k]) if k in changes else v for k, v in sections.items()}
        return dataclasses.replace(self, **updated)

    def flat(self) -> Dict[str, Any]:
        """Every setting by its flag name."""
        return {flag_name(f): getattr(section, f.name)
                for section in (self.run, self.encoder, self.optimizer, self.options)
                for f in dataclasses.fields(section)}

    def to_dict(self) -> Dict[str, Any]:
        """{"method", "run", "encoder", "optimizer", <method>: options} as JSON-ready values."""
        return {"method": self.method, "run": dataclasses.asdict(self.run),
                "encoder": dataclasses.asdict(self.encoder), "optimizer": dataclasses.asdict(self.optimizer),
                self.method: dataclasses.asdict(self.options)}


def _owner(sections: Dict[str, Any], flat_name: str):
    for section_name, section in sections.items():
        for field in dataclasses.fields(section):
            if flag_name(field) == flat_name:
                return section_name, field
    return None


def _coerce(value: Any, annotation: Any) -> Any:
    """JSON and flag values to the field's type: lists become tuples."""
    if value is not None and typing.get_origin(annotation) is tuple and not isinstance(value, tuple):
        return tuple(value)
    return value


def section_from_dict(cls, values: Dict[str, Any]):
    """A section dataclass from a dict (as `to_dict` wrote it); unknown keys are an error."""
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(values) - names)
    if unknown:
        raise UserError(f"{cls.__name__}: unknown settings {unknown}.")
    types = field_types(cls)
    return cls(**{k: _coerce(v, types[k]) for k, v in values.items()})
