"""Training curves: the scalars a run wrote for TensorBoard, read back and drawn as one PNG.

`common.training.loop.run_training` writes `train/<metric>` every `log_every`
steps (the loss and its terms, `learning_rate`, PAUSE's `pu_weight`, ...) and
`eval/<metric>` at each evaluation (epoch ends, every `--eval_every` steps:
STS-B dev Spearman from the evaluator, masked-LM's held-out scores) into the
run's log directory. `read_scalars` reads
them back from the event files exactly as recorded (float32, as TensorBoard
stores them); `plot_training_curves` draws them against the step; the run writes
the picture into its artifact (`training_curves.png`, see
`common.training.publishing`).

A run of several phases (Trans-Encoder) logs each phase in its own subfolder;
each phase's steps start at 1 again, and `series` puts them end to end on the
run's global step, as `common.training.phases.PhaseRunner` counts it.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Dict, List, Optional, Tuple

import numpy as np
import tensorflow as tf
from tensorflow.core.util import event_pb2

CURVES_FILE = "training_curves.png"
# Training scalars that are not loss terms: schedules, and fractions of the batch.
SCHEDULE_TAGS = ("learning_rate", "pu_weight")
FRACTION_TAGS = ("accuracy", "labelled_fraction")
# The name of the run's own event files among its phases (which are subfolders).
RUN_ROOT = ""


@dataclasses.dataclass(frozen=True)
class Series:
    """One scalar over the steps.

    Attributes:
        steps: tuple of int. Increasing.
        values: tuple of float. As recorded (float32 values, widened).
        wall_times: tuple of float. When each step's value was logged (seconds since the
            epoch; `read_scalars` fills it, a series of several phases has none).
    """

    steps: Tuple[int, ...]
    values: Tuple[float, ...]
    wall_times: Tuple[float, ...] = ()


def _event_files(log_dir: str) -> Dict[str, List[str]]:
    """{subfolder relative to log_dir ("" for log_dir itself): its event files, oldest first}."""
    found: Dict[str, List[str]] = {}
    if not tf.io.gfile.isdir(log_dir):
        return found
    root = log_dir.rstrip("/")
    for directory, _, files in tf.io.gfile.walk(root):
        events = sorted(f for f in files if f.startswith("events.out.tfevents."))
        if events:
            relative = directory.rstrip("/")[len(root):].strip("/")
            found[relative] = [f"{directory.rstrip('/')}/{f}" for f in events]
    return found


def _value(value) -> Optional[float]:
    if value.HasField("simple_value"):
        return float(value.simple_value)
    if value.HasField("tensor"):
        array = tf.make_ndarray(value.tensor)
        if array.size == 1 and np.issubdtype(array.dtype, np.number):
            return float(array.reshape(()))
    return None


def read_scalars(log_dir: str) -> Dict[str, Dict[str, Series]]:
    """Every scalar of a run's TensorBoard event files.

    The event files of one folder are read oldest first and merged by step, so
    a resumed run (one events file per piece) gives one series in which a step
    logged again after the resume takes its later value.

    Args:
        log_dir: str. The run's log directory (local or gs://).

    Returns:
        {phase: {tag: Series}}, phases in the order they started ("" is the
        run's own event files; a phase is a subfolder, e.g. "cycle1_bi_a").
    """
    phases = []
    for phase, files in _event_files(log_dir).items():
        points: Dict[str, Dict[int, Tuple[float, float]]] = {}
        started = None
        for path in files:
            for record in tf.data.TFRecordDataset(path, buffer_size=1 << 18):
                event = event_pb2.Event.FromString(record.numpy())
                for value in event.summary.value:
                    scalar = _value(value)
                    if scalar is not None:
                        points.setdefault(value.tag, {})[int(event.step)] = (scalar, event.wall_time)
                        # The file's first record has whole seconds only: order phases by their first scalar.
                        started = event.wall_time if started is None else min(started, event.wall_time)
        tags = {tag: Series(tuple(sorted(p)), tuple(p[s][0] for s in sorted(p)), tuple(p[s][1] for s in sorted(p)))
                for tag, p in sorted(points.items())}
        if tags:
            phases.append((started or 0.0, phase, tags))
    return {phase: tags for _, phase, tags in sorted(phases, key=lambda item: (item[0], item[1]))}


def _offsets(scalars: Dict[str, Dict[str, Series]]) -> Dict[str, int]:
    """{phase: global steps of the phases before it} (a phase always logs its last step)."""
    offsets, offset = {}, 0
    for phase, tags in scalars.items():
        offsets[phase] = offset
        offset += max((s.steps[-1] for s in tags.values() if s.steps), default=0)
    return offsets


def series(scalars: Dict[str, Dict[str, Series]], tag: str) -> Series:
    """`tag` over the whole run: the phases end to end, on the run's global step."""
    offsets = _offsets(scalars)
    steps: List[int] = []
    values: List[float] = []
    for phase, tags in scalars.items():
        if tag in tags:
            steps += [offsets[phase] + s for s in tags[tag].steps]
            values += tags[tag].values
    return Series(tuple(steps), tuple(values))


# === Drawing ===

_NO_EVAL = "no evaluation recorded\n(--noeval_each_epoch and no --eval_every,\nor no STS-B dev data)"
_TITLES = {"stsb_dev_spearman": "STS-B dev Spearman x100", "heldout_loss": "held-out loss",
           "heldout_accuracy": "held-out accuracy", "labelled_fraction": "labelled fraction"}


def _lines(scalars, kind: str, wanted) -> List[Tuple[str, Series]]:
    """(legend label, series on the global step) of each `kind/<name>` tag with `wanted(name)`, per phase."""
    phased = len(scalars) > 1 or RUN_ROOT not in scalars
    offsets = _offsets(scalars)
    out = []
    for phase, tags in scalars.items():
        for tag, s in tags.items():
            prefix, _, name = tag.partition("/")
            if prefix == kind and wanted(name) and s.steps:
                label = f"{phase}: {name}" if phased else name
                out.append((label, Series(tuple(offsets[phase] + t for t in s.steps), s.values)))
    return out


def _draw(ax, lines, title: str, marker: bool = False) -> None:
    for label, s in lines:
        ax.plot(s.steps, s.values, label=label, marker="o" if marker or len(s.steps) < 3 else None, markersize=4)
    ax.set_title(title, fontsize=9)
    ax.set_xlabel("step", fontsize=8)
    ax.tick_params(labelsize=7)
    if len(lines) > 1:
        ax.legend(fontsize=7, loc="best")


def plot_training_curves(scalars: Dict[str, Dict[str, Series]], title: str) -> Optional[bytes]:
    """The training curves as PNG bytes, or None when the run recorded no scalars.

    Panels: the loss and its terms; the learning rate (with PAUSE's PU weight on a
    second axis); each evaluation metric (STS-B dev Spearman, held-out scores),
    or a note that none was recorded; other training scalars (accuracy, labelled
    fraction of the batch) when the method logs them.

    Args:
        scalars: from `read_scalars`.
        title: str. The figure's title (e.g. the run ID and method).
    """
    from common.figures import new_figure, png_bytes

    if not any(scalars.values()):
        return None
    not_losses = SCHEDULE_TAGS + FRACTION_TAGS
    panels = [("loss terms", _lines(scalars, "train", lambda n: n not in not_losses), False)]
    panels.append(("learning rate", _lines(scalars, "train", lambda n: n == "learning_rate"), False))
    evals = sorted({tag.partition("/")[2] for tags in scalars.values() for tag in tags if tag.startswith("eval/")})
    for name in evals or [None]:
        lines = [] if name is None else _lines(scalars, "eval", lambda n, name=name: n == name)
        panels.append((f"{_TITLES.get(name, name)} (evaluations)" if name else "evaluation", lines, True))
    others = _lines(scalars, "train", lambda n: n in FRACTION_TAGS)
    if others:
        names = sorted({label.rpartition(": ")[2] for label, _ in others})
        panels.append((" and ".join(_TITLES.get(n, n) for n in names) + " (training batches)", others, False))
    pu = _lines(scalars, "train", lambda n: n == "pu_weight")
    cols = min(3, len(panels))
    rows = (len(panels) + cols - 1) // cols
    fig = new_figure((4.5 * cols, 3.4 * rows + 0.4), dpi=100)
    axes = list(fig.subplots(rows, cols, squeeze=False).flat)
    for ax, (name, lines, marker) in zip(axes, panels):
        if name == "evaluation":
            ax.text(0.5, 0.5, _NO_EVAL, ha="center", va="center", fontsize=8, transform=ax.transAxes)
            ax.set_title("evaluation", fontsize=9)
            ax.set_xticks([])
            ax.set_yticks([])
            continue
        _draw(ax, lines, name, marker)
        if name == "learning rate":
            from matplotlib.ticker import FormatStrFormatter

            ax.yaxis.set_major_formatter(FormatStrFormatter("%.1e"))  # no offset text over the title
        if name == "learning rate" and pu:
            twin = ax.twinx()
            for label, s in pu:
                twin.plot(s.steps, s.values, color="tab:red", linestyle="--", label=label)
            twin.set_ylabel("PU weight", fontsize=8, color="tab:red")
            twin.tick_params(labelsize=7, colors="tab:red")
            ax.set_title("learning rate (PU weight dashed, right axis)", fontsize=9)
    for ax in axes[len(panels):]:
        ax.axis("off")
    fig.suptitle(title, fontsize=10)
    _set_margins(fig, rows, cols)
    return png_bytes(fig)


# Margins and gaps in inches, fitted to the fonts above: tick labels as wide as "5.0e-05" on the left of
# a panel, the PU weight's ticks and label on the right of one, a title above and "step" below each.
_MARGINS = {"left": 0.6, "right": 0.55, "top": 0.7, "bottom": 0.5, "wspace": 1.0, "hspace": 0.8}


def _set_margins(fig, rows: int, cols: int) -> None:
    """Places the panels at fixed margins (`_MARGINS`): what `tight_layout` would find for these
    panels, without the extra rendering pass it takes to measure them."""
    width, height = fig.get_size_inches()
    m = _MARGINS
    panel_w = (width - m["left"] - m["right"] - (cols - 1) * m["wspace"]) / cols
    panel_h = (height - m["top"] - m["bottom"] - (rows - 1) * m["hspace"]) / rows
    fig.subplots_adjust(left=m["left"] / width, right=1 - m["right"] / width, bottom=m["bottom"] / height,
                        top=1 - m["top"] / height, wspace=m["wspace"] / panel_w, hspace=m["hspace"] / panel_h)


def write_training_curves(log_dir: str, path: str, title: str = "") -> bool:
    """Draws the curves of the run logged in `log_dir` into `path` (local or gs://).

    Returns:
        Whether a picture was written (False when the run recorded no scalars).
    """
    from common.figures import write_bytes

    png = plot_training_curves(read_scalars(log_dir), title or os.path.basename(log_dir.rstrip("/")))
    if png is None:
        return False
    write_bytes(png, path)
    return True
