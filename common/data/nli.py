"""NLI sentence pairs, and sentence pairs with class labels of any task.

The files: the official SNLI / MultiNLI `*.jsonl` and `*.txt`, GLUE's MNLI `*.tsv`, and any
CSV, TSV, JSONL, Parquet file or saved `datasets` folder (common.data.tables: columns found
by name, `--columns` maps others); SentEval's `downstream/SNLI/{s1,s2,labels}.<split>`
(`senteval:<split>`). Labels are named by `--labels` (default: the NLI names). A pair whose
label is empty, "-" (the SNLI authors' "no gold label") or missing is kept as unlabelled
(label -1): PAUSE learns from it as positive-unlabelled data, methods that need labels leave
it out and count it. A pair with an empty sentence is dropped and counted; anything else
unexpected raises an error naming the file and line.
"""

from __future__ import annotations

import dataclasses
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf

from common.data.fingerprint import fingerprint_rows
from common.data.files import DATA_HELP, read_lines
from common.data.tables import UNLABELED, label_ids, read_table
from common.errors import UserError

LABELS = ("entailment", "neutral", "contradiction")
LABEL_IDS = {name: i for i, name in enumerate(LABELS)}
SENTEVAL_PREFIX = "senteval:"
# The toolkit's fields of a labelled pair, and the official files' names for them.
NLI_FIELDS = ("premise", "hypothesis", "label")
NLI_ALIASES = {"premise": ("sentence1",), "hypothesis": ("sentence2",), "label": ("gold_label",)}


# The official SNLI + MultiNLI training files, relative to the data root, as
# `python download_nli.py --out=<DATA_PATH>/nli` lays them out.
DEFAULT_NLI_TRAIN = ("nli/snli_1.0/snli_1.0_train.jsonl", "nli/multinli_1.0/multinli_1.0_train.jsonl")


@dataclasses.dataclass
class NliPairs:
    """Sentence pairs with integer labels: an index into the label names, or -1 (unlabelled).

    Attributes:
        premises, hypotheses: list of str.
        labels: np.ndarray. [n] int32.
        dropped: int. Rows left out because a sentence was empty.
        read: int. Rows read (kept + dropped).
        label_columns: tuple of str. The columns (or files) the labels were read from; empty when
            the sources have none, so that a message can tell a missing column from empty cells.
    """

    premises: List[str]
    hypotheses: List[str]
    labels: np.ndarray
    dropped: int = 0
    read: int = 0
    label_columns: Tuple[str, ...] = ()

    def __len__(self) -> int:
        return len(self.labels)

    def fingerprint(self) -> str:
        """SHA-256 of the pairs and labels, recorded with trained models."""
        return fingerprint_rows(zip(self.premises, self.hypotheses, self.labels.tolist()))

    @property
    def labelled(self) -> int:
        return int((self.labels >= 0).sum())

    def report(self, num_classes: int) -> Dict[str, object]:
        """What was read, kept and dropped: recorded in a run's config and printed."""
        per_class = np.bincount(self.labels[self.labels >= 0], minlength=num_classes).tolist()
        return {"read": self.read, "pairs": len(self), "labelled": self.labelled, "per_class": per_class,
                "unlabelled": len(self) - self.labelled, "dropped_empty_sentence": self.dropped}

    def select(self, rows: np.ndarray) -> "NliPairs":
        """The pairs at `rows` (the counts of what was read stay)."""
        return NliPairs([self.premises[i] for i in rows], [self.hypotheses[i] for i in rows], self.labels[rows],
                        self.dropped, self.read, self.label_columns)

    def unlabelled_copy(self) -> "NliPairs":
        """The same pairs with every label hidden."""
        return dataclasses.replace(self, labels=np.full_like(self.labels, UNLABELED), label_columns=())

    @staticmethod
    def concat(parts: Sequence["NliPairs"]) -> "NliPairs":
        return NliPairs(
            [p for part in parts for p in part.premises],
            [h for part in parts for h in part.hypotheses],
            np.concatenate([part.labels for part in parts]) if parts else np.zeros([0], np.int32),
            sum(part.dropped for part in parts),
            sum(part.read for part in parts),
            tuple(dict.fromkeys(c for part in parts for c in part.label_columns)),
        )


def read_pairs_table(path: str, columns: Optional[Dict[str, str]] = None,
                     labels: Sequence[str] = LABELS, with_labels: bool = True) -> NliPairs:
    """Labelled (or unlabelled) sentence pairs from a table (see common.data.tables).

    Args:
        path: str. A `.jsonl`, `.csv`, `.tsv`, `.txt` (tab-separated, with a header), `.parquet`
            file or a saved `datasets` folder; local or `gs://`.
        columns: dict or None. `--columns`: toolkit field (premise, hypothesis, label) -> column.
        labels: sequence of str. The label names in class-id order (`--labels`).
        with_labels: bool. False: every pair is unlabelled and no label column is needed
            (`--unlabeled_data`).

    Raises:
        UserError: for a missing column, a missing sentence cell or an unknown label (file:line).
    """
    fields = NLI_FIELDS if with_labels else NLI_FIELDS[:2]
    table = read_table(path, fields, columns, NLI_ALIASES, optional=("label",))
    premises, hypotheses, keep, dropped = [], [], [], 0
    for row, (p, h) in enumerate(zip(table.fields["premise"], table.fields["hypothesis"])):
        if not p.strip() or not h.strip():
            dropped += 1
            continue
        premises.append(p)
        hypotheses.append(h)
        keep.append(row)
    ids = label_ids(table, "label", labels) if with_labels else np.full([len(table)], UNLABELED, np.int32)
    label_columns = (table.source_columns["label"],) if with_labels and "label" in table.source_columns else ()
    return NliPairs(premises, hypotheses, ids[np.asarray(keep, np.int64)].astype(np.int32), dropped, len(table),
                    label_columns)


def read_senteval_snli(data_path: str, split: str) -> NliPairs:
    """SentEval's `downstream/SNLI/{s1,s2,labels}.<split>`."""
    directory = f"{data_path.rstrip('/')}/downstream/SNLI"
    files = [f"{directory}/{name}.{split}" for name in ("s1", "s2", "labels")]
    for f in files:
        if not tf.io.gfile.exists(f):
            raise FileNotFoundError(
                f"NLI file not found: {f}. SentEval's SNLI has train, dev and test splits "
                f"(the shared data has dev and test only); {DATA_HELP}."
            )
    s1, s2, gold = (read_lines(f) for f in files)
    if not (len(s1) == len(s2) == len(gold)):
        raise UserError(f"{directory}: s1.{split}, s2.{split} and labels.{split} have "
                         f"{len(s1)}, {len(s2)} and {len(gold)} lines; expected one line per pair in each.")
    names = {name: i for i, name in enumerate(LABELS)}
    labels = []
    for line_no, g in enumerate(gold, start=1):
        g = g.strip()
        if g in ("", "-"):
            labels.append(UNLABELED)
        elif g in names:
            labels.append(names[g])
        else:
            raise UserError(f"{files[2]}:{line_no}: unknown label {g!r}; expected one of {list(LABELS)} or '-'.")
    return NliPairs(list(s1), list(s2), np.asarray(labels, np.int32), 0, len(gold), (files[2],))


def read_nli(source: str, data_path: str = "", columns: Optional[Dict[str, str]] = None,
             labels: Sequence[str] = LABELS, with_labels: bool = True) -> NliPairs:
    """Reads one source: a table file (`read_pairs_table`; local or `gs://`), or
    `senteval:<split>` for `<data_path>/downstream/SNLI/*.<split>`. `with_labels=False`
    reads every pair as unlabelled (no label column needed).

    Raises:
        FileNotFoundError: naming the file and how to get the NLI data.
        UserError: see `read_pairs_table`.
    """
    if source.startswith(SENTEVAL_PREFIX):
        if tuple(labels) != LABELS:
            raise UserError(f"{source}: SentEval's SNLI has the NLI labels {list(LABELS)}; leave --labels out.")
        pairs = read_senteval_snli(data_path, source[len(SENTEVAL_PREFIX):])
        return pairs if with_labels else pairs.unlabelled_copy()
    if not tf.io.gfile.exists(source):
        raise FileNotFoundError(
            f"Training file not found: {source}. For SNLI/MultiNLI run "
            "`python download_nli.py --out=<DATA_PATH>/nli`, or put the official files there; "
            f"{DATA_HELP}."
        )
    return read_pairs_table(source, columns, labels, with_labels)


def read_nli_sources(sources: Sequence[str], data_path: str = "", columns: Optional[Dict[str, str]] = None,
                     labels: Sequence[str] = LABELS) -> NliPairs:
    """Reads and concatenates several sources (see `read_nli`)."""
    if not sources:
        raise UserError("No training pairs given (--train_data).")
    return NliPairs.concat([read_nli(s, data_path, columns, labels) for s in sources])
