"""SimCSE training data: sentences (unsupervised) and NLI triples (supervised)."""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

from common.data.files import read_lines
from common.data.nli import LABEL_IDS, SENTEVAL_PREFIX, read_nli
from common.data.tables import is_table
from common.data.sentences import sentences_from_documents
from common.data.sources import resolve_sources
from common.data.sts import load_stsb
from common.errors import UserError

STSB_PREFIX = "stsb:"
SENTENCES_PREFIX = "sentences:"


def read_sentences(sources: Sequence[str], data_path: str, max_sentences: int = 1_000_000,
                   seed: int = 0, columns: Optional[Dict[str, str]] = None) -> List[str]:
    """Distinct sentences, in first-seen order, from `.txt` files (one per line),
    `sentences:<documents file>` (a seeded sample of `max_sentences` sentences cut
    from documents, one per line), tables of pairs (`.jsonl`, `.csv`, `.tsv`, `.parquet`,
    a saved datasets folder, NLI `.txt` with a gold_label header, or any tab-separated `.txt`
    when `columns` is given; `columns` maps their premise and hypothesis columns),
    `senteval:<split>` or `stsb:<split>`. Empty lines are ignored."""
    seen: Dict[str, None] = {}
    for source in resolve_sources(sources, data_path):
        if source.startswith(SENTENCES_PREFIX):
            documents = resolve_sources([source[len(SENTENCES_PREFIX):]], data_path)
            found = sentences_from_documents(documents, max_sentences, seed)
        elif source.startswith(STSB_PREFIX):
            pairs = load_stsb(data_path, source[len(STSB_PREFIX):])
            found = pairs.sentences1 + pairs.sentences2
        elif source.startswith(SENTEVAL_PREFIX) or (is_table(source) and not source.endswith(".txt")) \
                or (source.endswith(".txt") and (columns or _is_nli_txt(source))):
            pairs = read_nli(source, data_path, columns, with_labels=False)
            found = pairs.premises + pairs.hypotheses
        else:
            found = [line.strip() for line in read_lines(source)]
        for sentence in found:
            if sentence.strip():
                seen.setdefault(sentence, None)
    if not seen:
        raise UserError(f"No training sentences in {list(sources)}.")
    return list(seen)


def _is_nli_txt(path: str) -> bool:
    """A `.txt` whose header names NLI columns: a table, not one sentence per line."""
    first = (read_lines(path) or [""])[0]
    return "gold_label" in first.split("\t") or "premise" in first.split("\t")


def read_triples(sources: Sequence[str], data_path: str,
                 columns: Optional[Dict[str, str]] = None) -> Tuple[List[str], List[str], List[str]]:
    """(premise, entailment hypothesis, contradiction hypothesis) triples: for each
    premise with both, its first entailment and first contradiction hypothesis
    (unlabelled pairs are left out)."""
    by_premise: Dict[str, Dict[int, str]] = {}
    for source in resolve_sources(sources, data_path):
        pairs = read_nli(source, data_path, columns)
        for p, h, y in zip(pairs.premises, pairs.hypotheses, pairs.labels.tolist()):
            by_premise.setdefault(p, {}).setdefault(y, h)
    ent, con = LABEL_IDS["entailment"], LABEL_IDS["contradiction"]
    triples = [(p, hyps[ent], hyps[con]) for p, hyps in by_premise.items() if ent in hyps and con in hyps]
    if not triples:
        raise UserError(f"No premise in {list(sources)} has both an entailment and a contradiction hypothesis.")
    return [t[0] for t in triples], [t[1] for t in triples], [t[2] for t in triples]
