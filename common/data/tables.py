"""One reader for the tables users train and evaluate on: CSV, TSV, JSONL, and as optional
extras Parquet and a Hugging Face `datasets` folder saved with `save_to_disk`.

A caller asks for the toolkit's fields (`premise`, `hypothesis`, `label`; `sentence1`,
`sentence2`, `score`); each is found in the file under its own name, one of the caller's
aliases (the official NLI files' `sentence1` / `sentence2` / `gold_label`), or the column
that `--columns=field:column,...` maps to it. What was read, kept and dropped is counted
(`Table.report`) so that a run can print and record it; a malformed row is an error naming
its file and line.

    table = read_table("pairs.csv", ("premise", "hypothesis", "label"),
                       columns=parse_columns(["premise:sentence_a", "hypothesis:sentence_b"]))
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf

from common.data.files import DATA_HELP, open_data_file, read_lines
from common.errors import UserError

# Extensions and what reads them. `.txt` is tab-separated with a header (the official SNLI and
# MultiNLI `*.txt` files), or, for callers that allow it, two positional columns without one.
TABLE_EXTENSIONS = (".csv", ".tsv", ".txt", ".jsonl", ".parquet")
# The optional extras, pinned to versions verified with this toolkit's numpy.
PARQUET_EXTRA = "pyarrow==26.0.1"
DATASETS_EXTRA = "datasets==5.2.0"
# What a label cell holds when the row has no label: empty, "-" (SNLI's "no gold label"),
# a JSON null, or -1 (the unlabelled id of Hugging Face datasets).
NO_LABEL = ("", "-", "-1")
UNLABELED = -1


@dataclasses.dataclass
class Table:
    """The requested fields of a table, row by row.

    Attributes:
        path: str. The file or folder read.
        fields: dict. Toolkit field -> list of cell texts (None where the row has no such cell).
        lines: list of int. The file line (1-based) each row starts on (row number for Parquet
            and datasets folders), for messages.
        source_columns: dict. Toolkit field -> the file's column it was read from.
    """

    path: str
    fields: Dict[str, List[Optional[str]]]
    lines: List[int]
    source_columns: Dict[str, str]

    def __len__(self) -> int:
        return len(self.lines)


def parse_columns(entries: Sequence[str], known: Optional[Sequence[str]] = None) -> Dict[str, str]:
    """`--columns` entries (`field:column`) as {field: column}.

    Args:
        entries: sequence of str. E.g. ("premise:sentence_a", "label:relation").
        known: sequence of str or None. The fields the caller reads; another field is an error.

    Raises:
        UserError: for an entry without a colon, a field named twice or an unknown field.
    """
    mapping: Dict[str, str] = {}
    for entry in entries:
        field, sep, column = entry.partition(":")
        field, column = field.strip(), column.strip()
        if not sep or not field or not column:
            raise UserError(f"--columns: expected field:column (e.g. premise:sentence_a), got {entry!r}.")
        if field in mapping:
            raise UserError(f"--columns names the field {field!r} twice.")
        mapping[field] = column
    if known is not None:
        unknown = sorted(set(mapping) - set(known))
        if unknown:
            raise UserError(f"--columns maps {unknown}, which this data does not use; its fields are "
                             f"{list(known)} (field:column, the toolkit's field on the left).")
    return mapping


def is_table(path: str) -> bool:
    """Whether `path` is a file this module reads by its extension, or a saved datasets folder."""
    return path.endswith(TABLE_EXTENSIONS) or _is_datasets_folder(path)


def _is_datasets_folder(path: str) -> bool:
    return tf.io.gfile.isdir(path) and tf.io.gfile.exists(path.rstrip("/") + "/state.json")


def read_table(path: str, fields: Sequence[str], columns: Optional[Mapping[str, str]] = None,
               aliases: Optional[Mapping[str, Sequence[str]]] = None, optional: Sequence[str] = (),
               positional: bool = False) -> Table:
    """Reads the requested fields of every row of a table.

    Args:
        path: str. A `.csv`, `.tsv`, `.txt` (tab-separated), `.jsonl` or `.parquet` file, or a
            folder written by `datasets.Dataset.save_to_disk`; local or `gs://`.
        fields: sequence of str. The toolkit's field names to read.
        columns: mapping or None. Field -> the file's column (`--columns`); overrides aliases.
        aliases: mapping or None. Field -> further column names to look for, in order
            (after the field's own name).
        optional: sequence of str. Fields that may be absent from the file (their cells are None).
        positional: bool. A `.tsv` / `.txt` whose first line names none of the fields is read
            without a header, the fields taken from the columns in order (Trans-Encoder's
            pair files: two tab-separated sentences per line).

    Returns:
        Table.

    Raises:
        FileNotFoundError: for a missing file.
        UserError: for an unknown format, a missing column (naming the columns found and
            `--columns`), a malformed row (file:line), or a missing optional extra.
    """
    columns = dict(columns or {})
    aliases = aliases or {}
    if not tf.io.gfile.exists(path):
        raise FileNotFoundError(f"Data file not found: {path}; {DATA_HELP}.")
    if path.endswith(".jsonl"):
        header, rows = _jsonl_rows(path)
    elif path.endswith(".csv"):
        header, rows = _csv_rows(path)
    elif path.endswith((".tsv", ".txt")):
        header, rows = _tsv_rows(path, fields, columns, aliases, positional)
    elif path.endswith(".parquet"):
        header, rows = _parquet_rows(path)
    elif _is_datasets_folder(path):
        header, rows = _datasets_rows(path)
    else:
        raise UserError(f"{path}: unknown table format; expected .csv, .tsv, .txt (tab-separated), .jsonl, "
                         ".parquet or a folder saved by datasets' save_to_disk.")
    source = {}
    for field in fields:
        candidates = [columns[field]] if field in columns else [field, *aliases.get(field, ())]
        found = next((c for c in candidates if c in header), None)
        # A column the user named must exist even for an optional field: an optional label
        # column that is silently absent turns every pair into an unlabelled one.
        if found is None and (field not in optional or field in columns):
            advice = (f"Map it with --columns={field}:<column>" if field not in columns
                      else f"Correct --columns: {field}:<one of those columns>")
            raise UserError(f"{path}: no column for {field!r} (looked for {candidates}); the file has "
                             f"{header_names(header)}. {advice}.")
        if found is not None:
            source[field] = found
    required = [f for f in fields if f in source and f not in optional]
    # A tab-separated row must reach the last column read (the official files' rows end early
    # in columns nobody reads).
    needed = max(header.index(source[f]) for f in source) + 1 if isinstance(header, list) and source else 0
    out: Dict[str, List[Optional[str]]] = {f: [] for f in fields}
    lines: List[int] = []
    for line_no, row in rows:
        if len(row) < needed:
            raise UserError(f"{path}:{line_no}: expected at least {needed} tab-separated columns, got {len(row)}.")
        for field in required:
            if row.get(source[field]) is None:
                raise UserError(f"{path}:{line_no}: no {source[field]!r} in this row; every row needs the "
                                 f"{field} ({list(required)} are required).")
        for field in fields:
            value = row.get(source[field]) if field in source else None
            out[field].append(None if value is None else _text(value))
        lines.append(line_no)
    return Table(path, out, lines, source)


def listed(values: Sequence[str], limit: int = 20) -> List[str]:
    """The first `limit` values for a message, and how many there are when that is not all."""
    return list(values[:limit]) + ([f"... ({len(values):,} in all)"] if len(values) > limit else [])


def header_names(header) -> List[str]:
    """The columns of a header for a message: in file order where the format has one (CSV, TSV), else sorted."""
    return listed(list(header) if isinstance(header, list) else sorted(header))


def _text(value) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _jsonl_rows(path: str):
    rows, header = [], set()
    for line_no, line in enumerate(read_lines(path), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise UserError(f"{path}:{line_no}: not valid JSON ({e.msg}); expected one JSON object per line.") from None
        if not isinstance(row, dict):
            raise UserError(f"{path}:{line_no}: expected a JSON object per line, got {type(row).__name__}.")
        header.update(row)
        rows.append((line_no, row))
    return header, rows


def _csv_rows(path: str):
    reader = csv.reader(io.StringIO(open_data_file(path), newline=""))
    try:
        header = next(reader)
    except StopIteration:
        raise UserError(f"{path}: empty file; expected a header line naming the columns.") from None
    except csv.Error as e:
        raise UserError(f"{path}:1: not valid CSV ({e}).") from None
    header = [h.strip() for h in header]
    rows, start = [], reader.line_num + 1
    try:
        for fields in reader:
            if fields and any(f.strip() for f in fields):
                if len(fields) != len(header):
                    raise UserError(f"{path}:{start}: expected {len(header)} comma-separated columns as the header "
                                     f"has, got {len(fields)}; quote cells that hold commas (\"a, b\").")
                rows.append((start, dict(zip(header, fields))))
            start = reader.line_num + 1
    except csv.Error as e:
        raise UserError(f"{path}:{start}: not valid CSV ({e}); check the quoting of that row.") from None
    # In file order for messages; each name once, as the rows' dicts hold it.
    return list(dict.fromkeys(header)), rows


def _tsv_rows(path: str, fields, columns, aliases, positional: bool):
    lines = read_lines(path)
    if not lines:
        raise UserError(f"{path}: empty file; expected a header line naming the columns.")
    first = lines[0].split("\t")
    names = {c for f in fields for c in ([columns[f]] if f in columns else [f, *aliases.get(f, ())])}
    if positional and not columns and not names & set(first):
        header = list(fields)
        numbered = enumerate(lines, start=1)
    else:
        header = first
        numbered = enumerate(lines[1:], start=2)
    rows = []
    for line_no, line in numbered:
        if line.strip():
            rows.append((line_no, dict(zip(header, line.split("\t")))))
    return header, rows


def _missing_extra(kind: str, package: str) -> UserError:
    return UserError(f"Reading {kind} needs the optional package {package.split('==')[0]}: "
                     f"pip install {package} (or convert the file to .csv or .jsonl).")


def _parquet_rows(path: str):
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise _missing_extra("Parquet files", PARQUET_EXTRA) from None
    with tf.io.gfile.GFile(path, "rb") as f:
        table = pq.read_table(io.BytesIO(f.read()))
    records = table.to_pylist()
    return set(table.column_names), list(enumerate(records, start=1))


def _datasets_rows(path: str):
    try:
        import datasets
    except ImportError:
        raise _missing_extra("a saved datasets folder", DATASETS_EXTRA) from None
    dataset = datasets.load_from_disk(path)
    if isinstance(dataset, datasets.DatasetDict):
        raise UserError(f"{path}: a DatasetDict with splits {list(dataset)}; give one split's folder, "
                         f"e.g. {path.rstrip('/')}/{next(iter(dataset))}.")
    return set(dataset.column_names), list(enumerate(dataset, start=1))


# === Labels ===


def label_ids(table: Table, field: str, names: Sequence[str]) -> np.ndarray:
    """The class id of every row: its label's index in `names`, or -1 for an unlabelled row.

    A cell is a label name, or an integer class id in [0, K) (how `datasets` stores classes);
    an empty cell, "-", a JSON null, -1 or a missing column mean "no label". Cells that are all
    class ids yet leave a class without a row are not read as ids: 0/1 cells of a two-class
    task against the three NLI names would otherwise train an NLI model on the wrong classes.

    Raises:
        UserError: when no cell is one of `names` (naming the values found, `--labels` and
            `--columns`), or naming file:line for a label that is not in `names` among ones that are.
    """
    index = {name: i for i, name in enumerate(names)}
    ids = np.full([len(table)], UNLABELED, np.int32)
    unknown: Dict[str, int] = {}  # label -> its first row
    by_name = False
    for row, cell in enumerate(table.fields[field]):
        if cell is None or cell.strip() in NO_LABEL:
            continue
        text = cell.strip()
        if text in index:
            ids[row] = index[text]
            by_name = True
        elif text.isdigit() and int(text) < len(names):
            ids[row] = int(text)
        else:
            unknown.setdefault(text, row)
    if not by_name and (unknown or (0 < len(set(ids[ids >= 0].tolist())) < len(names))):
        found = sorted({c.strip() for c in table.fields[field] if c is not None and c.strip() not in NO_LABEL})
        raise _no_label_matches(table, field, names, found)
    if unknown:
        text, row = next(iter(unknown.items()))
        raise UserError(f"{table.path}:{table.lines[row]}: unknown label {text!r}; expected one of "
                         f"{list(names)}, a class id 0-{len(names) - 1}, or an empty cell / '-' for an "
                         f"unlabelled row. Name the labels with --labels=a,b,... (in class-id order).")
    return ids


# More distinct values than this in a label column suggest the wrong column rather than a label set.
_MAX_SUGGESTED_LABELS = 20


def _no_label_matches(table: Table, field: str, names: Sequence[str], found: Sequence[str]) -> UserError:
    column = table.source_columns[field]
    if len(found) <= _MAX_SUGGESTED_LABELS:
        labels = ",".join(sorted(found, key=lambda v: (not v.isdigit(), int(v) if v.isdigit() else 0, v)))
        advice = (f"if they are your task's labels, name them in class-id order: --labels={labels}; if "
                  f"{column!r} is not the label column, map the right one with --columns={field}:<column>")
    else:
        advice = (f"so many values suggest {column!r} is not the label column: map the right one with "
                  f"--columns={field}:<column>")
    return UserError(f"{table.path}: no label in column {column!r} is one of the labels {list(names)}; it holds "
                     f"{listed(found, 10)}. Expected the --labels names (or class ids 0-{len(names) - 1} of every "
                     f"class): {advice}.")


def parse_labels(entries: Sequence[str], default: Tuple[str, ...]) -> Tuple[str, ...]:
    """`--labels` as a tuple of distinct names (the default when none are given).

    Raises:
        UserError: for fewer than two labels, an empty one or a repeated one.
    """
    names = tuple(e.strip() for e in entries) if entries else tuple(default)
    if len(names) < 2 or any(not n for n in names) or len(set(names)) != len(names):
        raise UserError(f"--labels: expected two or more distinct, non-empty names, got {list(entries)}.")
    if any(n in NO_LABEL for n in names):
        raise UserError(f"--labels: {[n for n in names if n in NO_LABEL]} marks an unlabelled row; "
                         "choose other names.")
    return names
