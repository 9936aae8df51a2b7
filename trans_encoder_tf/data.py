"""Trans-Encoder's unlabelled sentence pairs: the official `sts_sickr` set or a file of pairs."""

from __future__ import annotations

from typing import List, Sequence, Tuple

from common.data.files import read_lines
from common.data.sts import STS_SUBSETS, load_sick, load_sts_subset, load_stsb
from common.data.sources import resolve_sources
from common.errors import UserError

Pair = Tuple[str, str]
STS_SICKR = "sts_sickr"
# The evaluation sets whose (unlabelled) pairs `sts_sickr` trains on: the transductive setting.
STS_SICKR_SETS = ("SICK-E", "SICK-R", "STS-B", "STS12", "STS13", "STS14", "STS15", "STS16")


def deduplicate(pairs: Sequence[Pair]) -> List[Pair]:
    """The pairs in order of first appearance, each (sentence1, sentence2) once.

    (The official code keys on the concatenation sentence1 + sentence2, which
    also merges distinct pairs such as ("a b", "c") and ("a", "b c").)
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


def read_pair_file(path: str) -> List[Pair]:
    """One pair per line: two tab-separated sentences (further columns are ignored).

    Raises:
        FileNotFoundError: for a missing file.
        UserError: naming the file and line of a line without two sentences.
    """
    pairs = []
    for line_no, line in enumerate(read_lines(path), start=1):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) < 2:
            raise UserError(f"{path}:{line_no}: expected two tab-separated sentences, got {len(fields)} field(s).")
        pairs.append((fields[0], fields[1]))
    if not pairs:
        raise UserError(f"{path}: no sentence pairs (expected one pair per line, two tab-separated sentences).")
    return pairs


def load_pairs(source: str, data_path: str) -> Tuple[List[Pair], Tuple[str, ...]]:
    """The training pairs of `--pairs` and the evaluation sets they overlap.

    Args:
        source: str. "sts_sickr", or a file of pairs (relative paths that do not
            exist from the working directory are taken under `data_path`).
        data_path: str. Data root in SentEval's layout.

    Returns:
        (deduplicated pairs, names of the evaluation sets they come from).
    """
    if source == STS_SICKR:
        return sts_sickr_pairs(data_path), STS_SICKR_SETS
    return deduplicate(read_pair_file(resolve_sources([source], data_path)[0])), ()
