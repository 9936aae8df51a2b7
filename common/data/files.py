"""Locating data under `--data_path` with errors that tell the user what to do."""

from __future__ import annotations

from typing import List

import tensorflow as tf

from common.errors import UserError

# U+FEFF at the start of a file is a byte-order mark, never text.
BYTE_ORDER_MARK = "\ufeff"
DATA_HELP = "see docs/data.md (set DATA_PATH / --data_path to the root that holds downstream/)"


def require_data_dir(data_path: str, *parts: str) -> str:
    """Returns `<data_path>/<parts...>` or raises FileNotFoundError naming it."""
    if not data_path:
        raise FileNotFoundError(f"No data path given; {DATA_HELP}.")
    path = "/".join([data_path.rstrip("/"), *parts])
    if not tf.io.gfile.isdir(path):
        raise FileNotFoundError(f"Data directory not found: {path}; {DATA_HELP}.")
    return path


def _read_bytes(path: str) -> bytes:
    if not tf.io.gfile.exists(path):
        raise FileNotFoundError(f"Data file not found: {path}; {DATA_HELP}.")
    with tf.io.gfile.GFile(path, "rb") as f:
        return f.read()


def _invalid_utf8(path: str, data: bytes, error: UnicodeDecodeError) -> UserError:
    line = data.count(b"\n", 0, error.start) + 1
    column = error.start - (data.rfind(b"\n", 0, error.start) + 1) + 1
    return UserError(f"{path}:{line}: invalid UTF-8 (byte 0x{data[error.start]:02x} at column {column}); expected "
                      "UTF-8 text. Re-encode the file as UTF-8 (e.g. iconv -f latin1 -t utf-8).")


def open_data_file(path: str) -> str:
    """Reads a UTF-8 text file (local or gs://), without the byte-order mark that some editors
    (Excel, Notepad) and data sets (Microsoft's MRPC) put before the first character: left in, it
    would become part of the first column's name or the first sentence.

    Raises:
        FileNotFoundError: naming the file and where data is expected.
        UserError: for invalid UTF-8, naming the file, line and column (never
            silently replaced).
    """
    data = _read_bytes(path)
    try:
        return data.decode("utf-8").removeprefix(BYTE_ORDER_MARK)
    except UnicodeDecodeError as e:
        raise _invalid_utf8(path, data, e) from None


def read_lines(path: str) -> List[str]:
    """The lines of a UTF-8 text file, split on "\\n" only ("\\r\\n" too; a final newline ends the
    last line). U+2028, U+0085, form feeds and other characters that `str.splitlines` would
    break on stay inside their line, as JSONL and TSV require."""
    lines = open_data_file(path).split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]
