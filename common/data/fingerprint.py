"""One fingerprint for every dataset: recorded with trained models and used as cache keys."""

from __future__ import annotations

import hashlib
from typing import Iterable, Sequence, Union

Row = Union[str, Sequence[object]]


def fingerprint_rows(rows: Iterable[Row]) -> str:
    """SHA-256 of rows in order: each row's fields joined by tabs, one row per line.

    A row is a string (one field) or a sequence of fields (strings, numbers).
    The same data in the same order always gives the same digest; any change
    to a field, or to the order, gives another.
    """
    h = hashlib.sha256()
    for row in rows:
        text = row if isinstance(row, str) else "\t".join(str(x) for x in row)
        h.update(text.encode("utf-8"))
        h.update(b"\n")
    return h.hexdigest()
