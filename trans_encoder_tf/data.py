"""Trans-Encoder's unlabelled sentence pairs: the official `sts_sickr` set or a table of pairs."""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

from common.data.sts import STS_SUBSETS, load_sick, load_sts_subset, load_stsb
from common.data.sources import resolve_sources
from common.data.tables import read_table
from common.errors import UserError

Pair = Tuple[str, str]
STS_SICKR = "sts_sickr"
# The evaluation sets whose (unlabelled) pairs `sts_sickr` trains on: the transductive setting.
STS_SICKR_SETS = ("SICK-E", "SICK-R", "STS-B", "STS12", "STS13", "STS14", "STS15", "STS16")


def deduplicate(pairs: Sequence[Pair]) -> List[Pair]:
    """The pairs in order of first appearance, each (sentence1, sentence2) once.

    Keyed on the tuple, not the official code's concatenation: docs/methods/trans-encoder.md.
    """
    seen, out = set(), []
    for pair in pairs:
        if pair not in seen:
            seen.add(pair)
            out.append(pair)
    return out


def sts_sickr_pairs(data_path: str) -> List[Pair]:
    """The pairs of STS12-16 (scored ones, as evaluated), STS-B train/dev/test and SICK
    train/trial/test, labels dropped, deduplicated: the official `sts_sickr` task."""
    pairs: List[Pair] = []
    for year, subsets in STS_SUBSETS.items():
        for subset in subsets:
            ps = load_sts_subset(data_path, year, subset)
            pairs += zip(ps.sentences1, ps.sentences2)
    for split in ("train", "dev", "test"):
        ps = load_stsb(data_path, split)
        pairs += zip(ps.sentences1, ps.sentences2)
    for split in ("train", "dev", "test"):
        ps = load_sick(data_path, split)[0]
        pairs += zip(ps.sentences1, ps.sentences2)
    return deduplicate(pairs)


# The fields of a pair, and the names the NLI files give them.
PAIR_FIELDS = ("sentence1", "sentence2")
PAIR_ALIASES = {"sentence1": ("premise",), "sentence2": ("hypothesis",)}


def read_pair_file(path: str, columns: Optional[Dict[str, str]] = None) -> List[Pair]:
    """Sentence pairs from a table (common.data.tables): columns `sentence1` and `sentence2`
    (or `premise` / `hypothesis`, or mapped by `columns`); a `.tsv` or `.txt` without such a
    header is one pair per line, two tab-separated sentences (further columns ignored).

    Raises:
        FileNotFoundError: for a missing file.
        UserError: naming the file and line of a row without two sentences.
    """
    table = read_table(path, PAIR_FIELDS, columns, PAIR_ALIASES, positional=True)
    pairs = [(a, b) for a, b in zip(table.fields["sentence1"], table.fields["sentence2"]) if a.strip() and b.strip()]
    if not pairs:
        raise UserError(f"{path}: no sentence pairs (expected one pair per row: sentence1 and sentence2, or two "
                         "tab-separated sentences per line).")
    return pairs


def load_pairs(source: str, data_path: str,
               columns: Optional[Dict[str, str]] = None) -> Tuple[List[Pair], Tuple[str, ...]]:
    """The training pairs of `--pairs` and the evaluation sets they overlap.

    Args:
        source: str. "sts_sickr", or a table of pairs (relative paths that do not
            exist from the working directory are taken under `data_path`).
        data_path: str. Data root in SentEval's layout.
        columns: dict or None. `--columns` of the table (sentence1, sentence2 -> its columns).

    Returns:
        (deduplicated pairs, names of the evaluation sets they come from).
    """
    if source == STS_SICKR:
        if columns:
            raise UserError("--columns maps the columns of a --pairs file; --pairs=sts_sickr has none.")
        return sts_sickr_pairs(data_path), STS_SICKR_SETS
    return deduplicate(read_pair_file(resolve_sources([source], data_path)[0], columns)), ()
