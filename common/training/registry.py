"""The method registry: every training method registers itself once.

A method is a package beside `common/` whose `method.py` calls `register(Method(...))`
at import. `discover()` imports every such package (`<name>_tf/method.py`), so
`train.py`, the replica and resume checks and the script smoke tests, which all
iterate `methods()`, see a new method without any list being edited.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import pkgutil
from typing import Any, Callable, Dict, List, Optional, Tuple

import tensorflow as tf

from common.errors import UserError
from common.training.config import SECTIONS, TrainConfig, flag_name, section_from_dict

MakeDataset = Callable[[int], tf.data.Dataset]
METHOD_MODULE = "method"
METHOD_PACKAGE_SUFFIX = "_tf"


@dataclasses.dataclass(frozen=True)
class Method:
    """What a training method provides.

    Attributes:
        name: str. `--method=<name>`.
        description: str. One line for `--help`.
        options: type. The frozen dataclass of the method's own settings; its
            fields (declared with `common.training.config.option`) become flags.
            An optional `validate(config: TrainConfig)` method checks them.
        build_model: (TrainConfig) -> MethodModel. Called inside the strategy's
            scope; builds the encoder and heads (not the optimizer).
        make_data: (TrainConfig, MethodModel) -> (make_dataset, info):
            `make_dataset(start_step)` yields global batches continuing the
            seeded stream at `start_step`; `info` (JSON) describes the data,
            with a "fingerprint".
        defaults: dict. Flat setting name -> this method's default where it
            differs from the section's (e.g. {"batch_size": 1024}).
        mode_defaults: (given settings) -> more defaults that depend on them
            (SimCSE's supervised mode has its own batch size and learning rate).
        resolve: (TrainConfig) -> TrainConfig, applied before a run, e.g. to turn "one
            pass over the data" into steps; it must leave a resolved config unchanged
            (a resumed run's saved settings are resolved already).
        smoke: (directory) -> settings for a seconds-long run on the tiny test
            encoder, after writing whatever small data it needs under `directory`.
            The smoke, replica and resume tests of every method use it.
        driver: (RunContext) -> RunOutcome, for a method whose run trains several
            models in phases (`common.training.phases`); None: one model,
            `build_model` + `make_data`, trained by `runs.train_single_model`.
            `build_model` and `make_data` then describe the run's first phase
            (the replica check uses them).
        phase_models: dict. Phase name -> (build_model, make_data) of every kind
            of phase a driver trains, so the replica check covers each of them.
    """

    name: str
    description: str
    options: type
    build_model: Callable[[TrainConfig], Any]
    make_data: Callable[[TrainConfig, Any], Tuple[MakeDataset, Dict[str, Any]]]
    smoke: Callable[[str], Dict[str, Any]]
    defaults: Dict[str, Any] = dataclasses.field(default_factory=dict)
    mode_defaults: Optional[Callable[[Dict[str, Any]], Dict[str, Any]]] = None
    resolve: Optional[Callable[[TrainConfig], TrainConfig]] = None
    driver: Optional[Callable[[Any], Any]] = None
    phase_models: Dict[str, Tuple[Callable, Callable]] = dataclasses.field(default_factory=dict)

    def setting_names(self) -> List[str]:
        """Every flat setting (flag) name this method accepts."""
        names = [flag_name(f) for cls in SECTIONS.values() for f in dataclasses.fields(cls)]
        return names + [flag_name(f) for f in dataclasses.fields(self.options)]

    def default_of(self, name: str, given: Optional[Dict[str, Any]] = None) -> Any:
        """This method's default for a flat setting name."""
        extra = self.mode_defaults(given or {}) if self.mode_defaults else {}
        if name in extra:
            return extra[name]
        if name in self.defaults:
            return self.defaults[name]
        for cls in (*SECTIONS.values(), self.options):
            for f in dataclasses.fields(cls):
                if flag_name(f) == name:
                    return f.default
        raise KeyError(name)


_METHODS: Dict[str, Method] = {}


def register(method: Method) -> Method:
    """Adds a method; registering the same name twice is an error (two packages would collide)."""
    known = set(method.setting_names())
    unknown = sorted(set(method.defaults) - known)
    if unknown:
        raise ValueError(f"Method {method.name!r}: defaults for unknown settings {unknown}.")
    if method.name in _METHODS and _METHODS[method.name] is not method:
        raise ValueError(f"A method named {method.name!r} is already registered.")
    _METHODS[method.name] = method
    return method


def unregister(name: str) -> None:
    """Removes a method (tests that register a toy method clean up with it)."""
    _METHODS.pop(name, None)


def discover() -> None:
    """Imports every method package beside `common/` (`<name>_tf/method.py`)."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for info in pkgutil.iter_modules([root]):
        if info.ispkg and info.name.endswith(METHOD_PACKAGE_SUFFIX):
            if os.path.exists(os.path.join(root, info.name, f"{METHOD_MODULE}.py")):
                importlib.import_module(f"{info.name}.{METHOD_MODULE}")


def methods() -> Dict[str, Method]:
    """The registered methods by name (after `discover()`), sorted."""
    discover()
    return dict(sorted(_METHODS.items()))


def get(name: str) -> Method:
    """The method registered as `name`.

    Raises:
        UserError: naming the registered methods.
    """
    found = methods()
    if name not in found:
        raise UserError(f"Unknown method {name!r}; registered methods: {', '.join(found)}.")
    return found[name]


def build_config(method_name: str, settings: Optional[Dict[str, Any]] = None) -> TrainConfig:
    """A method's TrainConfig from flat settings (flag names), over its defaults.

    Args:
        method_name: str. A registered method.
        settings: dict. Flag name -> value; anything not given takes the
            method's default (`Method.defaults`, `mode_defaults`, then the
            section's own default).

    Raises:
        UserError: for a setting the method does not have, naming it and the method.

    Example:
        >>> from common.training import registry
        >>> config = registry.build_config("simcse", {"model": "random_tiny", "train_steps_per_epoch": 10})
        >>> config.method, config.run.train_steps_per_epoch, config.encoder.model
        ('simcse', 10, 'random_tiny')
    """
    method = get(method_name)
    given = dict(settings or {})
    accepted = set(method.setting_names())
    unknown = sorted(set(given) - accepted)
    if unknown:
        raise UserError(f"--method={method_name} does not use {', '.join('--' + u for u in unknown)}.")
    values = {**method.defaults, **(method.mode_defaults(given) if method.mode_defaults else {}), **given}
    sections = {}
    for section_name, cls in (*SECTIONS.items(), ("options", method.options)):
        fields = {f.name: values[flag_name(f)] for f in dataclasses.fields(cls) if flag_name(f) in values}
        sections[section_name] = section_from_dict(cls, fields)
    return TrainConfig(method=method_name, **sections)


def config_from_dict(saved: Dict[str, Any]) -> TrainConfig:
    """The TrainConfig that `TrainConfig.to_dict` wrote (run_config.json)."""
    if "method" not in saved:
        raise UserError("The saved run configuration does not name its method (written by an older version?).")
    method = get(saved["method"])
    sections = {name: section_from_dict(cls, saved.get(name, {})) for name, cls in SECTIONS.items()}
    return TrainConfig(method=method.name, options=section_from_dict(method.options, saved.get(method.name, {})),
                       **sections)
