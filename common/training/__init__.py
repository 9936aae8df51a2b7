"""Training: the method contract (`MethodModel`) and registry, typed run configs,
the run's life (`train`: `runs`; its settings and resume rules: `run_settings`; what it
publishes: `publishing`), the step loop with exact resume, training curves,
distribution, schedules and the optimizer, contrastive losses. Imports no evaluator."""

from common.training.config import EncoderSection, OptimizerSection, RunSection, TrainConfig, option
from common.training.curves import Series, plot_training_curves, read_scalars, series, write_training_curves
from common.training.contrastive import cross_replica_concat, in_batch_infonce_loss, nt_xent_loss
from common.training.distribute import is_chief, make_strategy, replica_sum
from common.training.loop import (LoopConfig, NonFiniteLossError, RunPaths, Selection, run_training,
                                  weights_fingerprint)
from common.training.method import MethodModel
from common.training.registry import Method, build_config, get, methods, register
from common.training.runs import train
from common.training.schedules import WarmupPolynomialDecay, make_optimizer

__all__ = ["EncoderSection", "LoopConfig", "Method", "MethodModel", "NonFiniteLossError", "OptimizerSection",
           "RunPaths", "RunSection", "Selection", "Series", "TrainConfig", "WarmupPolynomialDecay", "build_config",
           "cross_replica_concat", "get", "in_batch_infonce_loss", "is_chief", "make_optimizer", "make_strategy",
           "methods", "nt_xent_loss", "option", "plot_training_curves", "read_scalars", "register", "replica_sum",
           "run_training", "series", "train", "weights_fingerprint", "write_training_curves"]
