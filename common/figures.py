"""PNG pictures drawn with matplotlib's Agg renderer, written locally or to gs://.

Each figure is a `matplotlib.figure.Figure` with its own Agg canvas: no pyplot
state, no GUI backend, and the caller's matplotlib backend is left alone. A
figure is rendered to PNG bytes in memory first, so drawing and writing fail
separately: a picture that cannot be drawn never leaves a partial file, and the
file is written through `tf.io.gfile` (local paths and `gs://` alike).
"""

from __future__ import annotations

import io
from typing import Tuple


def new_figure(size: Tuple[float, float], dpi: int = 100):
    """A `Figure` of `size` inches, attached to an Agg canvas."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=size, dpi=dpi)
    FigureCanvasAgg(fig)
    return fig


def png_bytes(fig) -> bytes:
    """The figure rendered as PNG."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


def write_bytes(data: bytes, path: str) -> None:
    """Writes `data` to `path` (local or gs://)."""
    import tensorflow as tf

    with tf.io.gfile.GFile(path, "wb") as f:
        f.write(data)


def write_png(fig, path: str) -> None:
    """Renders `fig` and writes the PNG to `path` (local or gs://)."""
    write_bytes(png_bytes(fig), path)
