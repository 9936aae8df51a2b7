"""Locating data under `--data_path` with errors that tell the user what to do."""

from __future__ import annotations

import tensorflow as tf

DATA_HELP = "see README.md, section 'Data' (set DATA_PATH / --data_path to the root that holds downstream/)"


def require_data_dir(data_path: str, *parts: str) -> str:
    """Returns `<data_path>/<parts...>` or raises FileNotFoundError naming it."""
    if not data_path:
        raise FileNotFoundError(f"No data path given; {DATA_HELP}.")
    path = "/".join([data_path.rstrip("/"), *parts])
    if not tf.io.gfile.isdir(path):
        raise FileNotFoundError(f"Data directory not found: {path}; {DATA_HELP}.")
    return path


def open_data_file(path: str) -> str:
    """Reads a UTF-8 text file (invalid bytes become U+FFFD, never fatal)."""
    if not tf.io.gfile.exists(path):
        raise FileNotFoundError(f"Data file not found: {path}; {DATA_HELP}.")
    with tf.io.gfile.GFile(path, "rb") as f:
        return f.read().decode("utf-8", errors="replace")
