"""SentEval's tasks, read from its `data/downstream` and `data/probing` layout.

Each loader returns a `TaskData` whose splits hold the sentences as SentEval's
batcher sees them (whitespace tokens joined by single spaces) and the labels or
scores, in the order SentEval puts them before training: sorted by token count
(then label), stably. The order matters: SentEval's folds are scikit-learn's
`StratifiedKFold` over the samples in that order.

| task | files under `--data_path` | protocol |
| --- | --- | --- |
| MR, CR, SUBJ, MPQA | `downstream/<T>/...` (positive and negative files) | nested k-fold |
| TREC | `downstream/TREC/train_5500.label`, `TREC_10.label` | k-fold on train |
| MRPC | `downstream/MRPC/msr_paraphrase_{train,test}.txt` | k-fold on train |
| SST2, SST5 | `downstream/SST/{binary,fine}/sentiment-{train,dev,test}` | dev split |
| SICK-E | `downstream/SICK/SICK_{train,trial,test_annotated}.txt` | dev split |
| SNLI | `downstream/SNLI/{s1,s2,labels}.{train,dev,test}` | dev split |
| SICK-R, STS-B | SICK as above; `downstream/STS/STSBenchmark/sts-*.csv` | relatedness regressor |
| STS12-16 | `downstream/STS/STS1x-en-test/` | cosine similarity |
| probing (10) | `probing/<file>.txt` (`tr`/`va`/`te`, label, sentence) | dev split |

COCO image-caption retrieval (SentEval's ImageCaptionRetrieval) is out of scope.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import tensorflow as tf

from common.data.files import DATA_HELP, open_data_file, require_data_dir
from common.data.nli import LABELS as NLI_LABELS
from common.data.nli import read_senteval_snli
from common.data.sts import STS_SUBSETS, load_sick, load_sts_subset, load_stsb
from common.errors import UserError

# === Data classes ===


@dataclasses.dataclass(frozen=True)
class SentenceSplit:
    """One split of a single-sentence task.

    Attributes:
        sentences: tuple of str. Whitespace-normalised sentences.
        labels: int array [N]. Class ids.
    """

    sentences: Tuple[str, ...]
    labels: np.ndarray

    def __len__(self) -> int:
        return len(self.labels)

    def all_sentences(self) -> Tuple[str, ...]:
        return self.sentences


@dataclasses.dataclass(frozen=True)
class PairSplit:
    """One split of a sentence-pair task.

    Attributes:
        first, second: tuple of str. Whitespace-normalised sentences, aligned.
        labels: array [N]. Class ids (int) or gold scores (float).
    """

    first: Tuple[str, ...]
    second: Tuple[str, ...]
    labels: np.ndarray

    def __len__(self) -> int:
        return len(self.labels)

    def all_sentences(self) -> Tuple[str, ...]:
        return self.first + self.second


Split = Union[SentenceSplit, PairSplit]


@dataclasses.dataclass(frozen=True)
class TaskData:
    """A loaded task.

    Attributes:
        name: str. Canonical task name (see TASKS).
        dataset: str. The data set the sentences come from (SICK-E and SICK-R
            share "SICK"), the embedding cache's key.
        splits: dict. Split name -> SentenceSplit or PairSplit. "all" for the
            cross-validated MR/CR/SUBJ/MPQA; "train", "dev", "test" otherwise;
            one per subset for STS12-16.
        nclasses: int. Number of classes (0 for scored pairs).
        label_names: tuple of str. Name of each class id.
    """

    name: str
    dataset: str
    splits: Dict[str, Split]
    nclasses: int = 0
    label_names: Tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class TaskSpec:
    """How a task is read and evaluated.

    Attributes:
        name: str. Canonical name, used in `--tasks` and the results.
        senteval_name: str. SentEval's own name for it (accepted by `--tasks` too).
        group: str. "downstream", "sts" or "probing".
        protocol: str. "inner_kfold", "kfold", "split", "relatedness" or "sts".
        files: tuple of str. Files under the data root the task needs.
    """

    name: str
    senteval_name: str
    group: str
    protocol: str
    files: Tuple[str, ...]


# === Helpers ===


def text(line: str) -> str:
    """A sentence as SentEval's batcher passes it: whitespace tokens joined by single spaces."""
    return " ".join(line.split())


def _read_latin1(path: str) -> str:
    """A file SentEval reads as Latin-1 (MR, CR, SUBJ, MPQA, TREC)."""
    if not tf.io.gfile.exists(path):
        raise FileNotFoundError(f"Data file not found: {path}; {DATA_HELP}.")
    with tf.io.gfile.GFile(path, "rb") as f:
        return f.read().decode("latin-1")


def _sort_key_single(item: Tuple[str, object]) -> tuple:
    return len(item[0].split()), item[1]


def _sorted_split(sentences: Sequence[str], labels: Sequence) -> SentenceSplit:
    """SentEval's `sorted(zip(samples, labels), key=(len(tokens), label))`."""
    pairs = sorted(zip(sentences, labels), key=_sort_key_single)
    return SentenceSplit(tuple(s for s, _ in pairs), np.asarray([y for _, y in pairs]))


def _sorted_pairs(first: Sequence[str], second: Sequence[str], labels: Sequence,
                  key: Optional[Callable[[tuple], tuple]] = None) -> PairSplit:
    """SentEval's `sorted(zip(a, b, y), key=(len(a tokens), len(b tokens), y))`."""
    key = key or (lambda z: (len(z[0].split()), len(z[1].split()), z[2]))
    rows = sorted(zip(first, second, labels), key=key)
    return PairSplit(tuple(r[0] for r in rows), tuple(r[1] for r in rows), np.asarray([r[2] for r in rows]))


def _lines(content: str) -> List[str]:
    return content.splitlines()


# === Loaders ===

BINARY_FILES = {
    # task: (folder, file of label 1, file of label 0), as SentEval's binary.py.
    "MR": ("MR", "rt-polarity.pos", "rt-polarity.neg"),
    "CR": ("CR", "custrev.pos", "custrev.neg"),
    "SUBJ": ("SUBJ", "subj.objective", "subj.subjective"),
    "MPQA": ("MPQA", "mpqa.pos", "mpqa.neg"),
}


def load_binary(data_path: str, task: str) -> TaskData:
    """MR, CR, SUBJ or MPQA: one sentence per line (every line, empty ones too), label 1 then label 0.

    As in SentEval, SUBJ's objective sentences are label 1.
    """
    folder, positive, negative = BINARY_FILES[task]
    directory = require_data_dir(data_path, "downstream", folder)
    pos = [text(line) for line in _lines(_read_latin1(f"{directory}/{positive}"))]
    neg = [text(line) for line in _lines(_read_latin1(f"{directory}/{negative}"))]
    if not pos or not neg:
        raise UserError(f"{directory}: {positive} has {len(pos)} and {negative} {len(neg)} lines; "
                         "expected both non-empty.")
    split = _sorted_split(pos + neg, [1] * len(pos) + [0] * len(neg))
    names = ("negative", "positive") if task != "SUBJ" else ("subjective", "objective")
    return TaskData(task, task, {"all": split}, 2, names)


def _parse_int(field: str, path: str, line_no: int, what: str) -> int:
    try:
        return int(field)
    except ValueError:
        raise UserError(f"{path}:{line_no}: expected {what} (an integer), got {field!r}.") from None


def load_sst(data_path: str, nclasses: int) -> TaskData:
    """SST2 (`SST/binary`: "sentence<TAB>label") or SST5 (`SST/fine`: "label sentence")."""
    if nclasses not in (2, 5):
        raise UserError(f"SST has 2 or 5 classes, got {nclasses}.")
    directory = require_data_dir(data_path, "downstream", "SST", "binary" if nclasses == 2 else "fine")
    splits = {}
    for split in ("train", "dev", "test"):
        path = f"{directory}/sentiment-{split}"
        sentences, labels = [], []
        for line_no, line in enumerate(_lines(open_data_file(path)), start=1):
            if not line.strip():
                continue
            if nclasses == 2:
                fields = line.strip().split("\t")
                if len(fields) < 2:
                    raise UserError(f"{path}:{line_no}: expected 'sentence<TAB>label', got {line[:80]!r}.")
                sentence, label = fields[0], fields[1]
            else:
                fields = line.strip().split(" ", 1)
                label, sentence = fields[0], fields[1] if len(fields) > 1 else ""
            y = _parse_int(label, path, line_no, "a label")
            if not 0 <= y < nclasses:
                raise UserError(f"{path}:{line_no}: label {y} is not in [0, {nclasses}).")
            sentences.append(text(sentence))
            labels.append(y)
        splits[split] = _sorted_split(sentences, labels)
    name = "SST2" if nclasses == 2 else "SST5"
    names = ("negative", "positive") if nclasses == 2 else ("very negative", "negative", "neutral", "positive",
                                                            "very positive")
    return TaskData(name, name, splits, nclasses, names)


TREC_LABELS = ("ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM")


def load_trec(data_path: str) -> TaskData:
    """TREC: "COARSE:fine question" per line (Latin-1); the coarse class is the label."""
    directory = require_data_dir(data_path, "downstream", "TREC")
    ids = {name: i for i, name in enumerate(TREC_LABELS)}
    splits = {}
    for split, name in (("train", "train_5500.label"), ("test", "TREC_10.label")):
        path = f"{directory}/{name}"
        sentences, labels = [], []
        for line_no, line in enumerate(_lines(_read_latin1(path)), start=1):
            if not line.strip():
                continue
            target, sep, rest = line.strip().partition(":")
            if not sep or target not in ids or " " not in rest:
                raise UserError(f"{path}:{line_no}: expected 'CLASS:fine question' with CLASS in {TREC_LABELS}, "
                                 f"got {line[:80]!r}.")
            sentences.append(text(rest.split(" ", 1)[1]))
            labels.append(ids[target])
        splits[split] = _sorted_split(sentences, labels)
    return TaskData("TREC", "TREC", splits, len(TREC_LABELS), TREC_LABELS)


def load_mrpc(data_path: str) -> TaskData:
    """MRPC: a header, then "quality<TAB>id1<TAB>id2<TAB>sentence1<TAB>sentence2" (quality 1 = paraphrase)."""
    directory = require_data_dir(data_path, "downstream", "MRPC")
    splits = {}
    for split in ("train", "test"):
        path = f"{directory}/msr_paraphrase_{split}.txt"
        first, second, labels = [], [], []
        for line_no, line in enumerate(_lines(open_data_file(path)), start=1):
            if line_no == 1 or not line.strip():
                continue
            fields = line.strip().split("\t")
            if len(fields) < 5:
                raise UserError(f"{path}:{line_no}: expected 5 tab-separated columns, got {len(fields)}.")
            y = _parse_int(fields[0], path, line_no, "a 0/1 quality label")
            if y not in (0, 1):
                raise UserError(f"{path}:{line_no}: quality label must be 0 or 1, got {y}.")
            first.append(text(fields[3]))
            second.append(text(fields[4]))
            labels.append(y)
        splits[split] = _sorted_pairs(first, second, labels)
    return TaskData("MRPC", "MRPC", splits, 2, ("not paraphrase", "paraphrase"))


SICK_ENTAILMENT = ("CONTRADICTION", "NEUTRAL", "ENTAILMENT")
SICK_SPLIT_FILES = {"train": "SICK_train.txt", "dev": "SICK_trial.txt", "test": "SICK_test_annotated.txt"}


def load_sick_entailment(data_path: str) -> TaskData:
    """SICK-E: SICK's entailment judgement (CONTRADICTION 0, NEUTRAL 1, ENTAILMENT 2)."""
    ids = {name: i for i, name in enumerate(SICK_ENTAILMENT)}
    splits = {}
    for split in ("train", "dev", "test"):
        pairs, judgements = load_sick(data_path, split)
        for i, judgement in enumerate(judgements):
            if judgement not in ids:
                raise UserError(f"{data_path}/downstream/SICK/{SICK_SPLIT_FILES[split]}: pair {i + 1} after the "
                                 f"header: entailment judgement must be one of {SICK_ENTAILMENT}, got {judgement!r}.")
        splits[split] = _sorted_pairs([text(s) for s in pairs.sentences1], [text(s) for s in pairs.sentences2],
                                      [ids[j] for j in judgements])
    return TaskData("SICK-E", "SICK", splits, 3, SICK_ENTAILMENT)


def load_sick_relatedness(data_path: str) -> TaskData:
    """SICK-R: SICK's relatedness score (1-5)."""
    splits = {}
    for split in ("train", "dev", "test"):
        pairs, _ = load_sick(data_path, split)
        splits[split] = _sorted_pairs([text(s) for s in pairs.sentences1], [text(s) for s in pairs.sentences2],
                                      pairs.scores.tolist())
    return TaskData("SICK-R", "SICK", splits)


def load_sts_benchmark(data_path: str) -> TaskData:
    """STS-B: `sts-{train,dev,test}.csv` (score 0-5)."""
    splits = {}
    for split in ("train", "dev", "test"):
        pairs = load_stsb(data_path, split)
        splits[split] = _sorted_pairs([text(s) for s in pairs.sentences1], [text(s) for s in pairs.sentences2],
                                      pairs.scores.tolist())
    return TaskData("STS-B", "STS-B", splits)


def load_sts_year(data_path: str, year: str) -> TaskData:
    """STS12-16 (`year` "STS12".."STS16"): one split per subset, pairs with an empty gold line skipped."""
    splits = {}
    for subset in STS_SUBSETS[year.lower()]:
        pairs = load_sts_subset(data_path, year.lower(), subset)
        splits[subset] = PairSplit(tuple(text(s) for s in pairs.sentences1), tuple(text(s) for s in pairs.sentences2),
                                   np.asarray(pairs.scores, np.float64))
    return TaskData(year, year, splits)


def load_snli(data_path: str) -> TaskData:
    """SNLI in SentEval's `SNLI/{s1,s2,labels}.{train,dev,test}` (entailment 0, neutral 1, contradiction 2).

    SentEval sorts each split by (hypothesis length, premise length, label).
    """
    splits = {}
    for split in ("train", "dev", "test"):
        pairs = read_senteval_snli(data_path, split)
        splits[split] = _sorted_pairs(
            [text(s) for s in pairs.premises], [text(s) for s in pairs.hypotheses], pairs.labels.tolist(),
            key=lambda z: (len(z[1].split()), len(z[0].split()), NLI_LABELS[z[2]]))
    return TaskData("SNLI", "SNLI", splits, len(NLI_LABELS), NLI_LABELS)


PROBING_FILES = {
    # task: (SentEval's name, file under probing/)
    "SentLen": ("Length", "sentence_length.txt"),
    "WC": ("WordContent", "word_content.txt"),
    "TreeDepth": ("Depth", "tree_depth.txt"),
    "TopConst": ("TopConstituents", "top_constituents.txt"),
    "BShift": ("BigramShift", "bigram_shift.txt"),
    "Tense": ("Tense", "past_present.txt"),
    "SubjNum": ("SubjNumber", "subj_number.txt"),
    "ObjNum": ("ObjNumber", "obj_number.txt"),
    "SOMO": ("OddManOut", "odd_man_out.txt"),
    "CoordInv": ("CoordinationInversion", "coordination_inversion.txt"),
}
PROBING_SPLITS = {"tr": "train", "va": "dev", "te": "test"}


def load_probing(data_path: str, task: str) -> TaskData:
    """A probing task: "tr|va|te<TAB>label<TAB>sentence" per line (UTF-8).

    Class ids number the sorted distinct training labels, as SentEval's
    probing.py does.
    """
    directory = require_data_dir(data_path, "probing")
    path = f"{directory}/{PROBING_FILES[task][1]}"
    rows: Dict[str, List[Tuple[str, str, int]]] = {split: [] for split in PROBING_SPLITS.values()}
    for line_no, line in enumerate(_lines(open_data_file(path)), start=1):
        if not line.strip():
            continue
        fields = line.rstrip().split("\t")
        if len(fields) < 3 or fields[0] not in PROBING_SPLITS:
            raise UserError(f"{path}:{line_no}: expected 'tr|va|te<TAB>label<TAB>sentence', got {line[:80]!r}.")
        rows[PROBING_SPLITS[fields[0]]].append((text(fields[-1]), fields[1], line_no))
    for split, items in rows.items():
        if not items:
            raise UserError(f"{path}: no '{[k for k, v in PROBING_SPLITS.items() if v == split][0]}' ({split}) lines.")
    names = tuple(sorted({label for _, label, _ in rows["train"]}))
    ids = {name: i for i, name in enumerate(names)}
    splits = {}
    for split, items in rows.items():
        for _, label, line_no in items:
            if label not in ids:
                raise UserError(f"{path}:{line_no}: label {label!r} does not occur in the training lines.")
        splits[split] = _sorted_split([s for s, _, _ in items], [ids[label] for _, label, _ in items])
    return TaskData(task, task, splits, len(names), names)


# === Registry ===


def _spec(name, senteval_name, group, protocol, *files) -> TaskSpec:
    return TaskSpec(name, senteval_name, group, protocol, tuple(files))


def _binary_files(task: str) -> Tuple[str, ...]:
    folder, a, b = BINARY_FILES[task]
    return (f"downstream/{folder}/{a}", f"downstream/{folder}/{b}")


_SICK = tuple(f"downstream/SICK/{f}" for f in SICK_SPLIT_FILES.values())
_STSB = tuple(f"downstream/STS/STSBenchmark/sts-{s}.csv" for s in ("train", "dev", "test"))

TASKS: Dict[str, TaskSpec] = {
    **{t: _spec(t, t, "downstream", "inner_kfold", *_binary_files(t)) for t in ("MR", "CR", "SUBJ", "MPQA")},
    "SST2": _spec("SST2", "SST2", "downstream", "split",
                  *(f"downstream/SST/binary/sentiment-{s}" for s in ("train", "dev", "test"))),
    "SST5": _spec("SST5", "SST5", "downstream", "split",
                  *(f"downstream/SST/fine/sentiment-{s}" for s in ("train", "dev", "test"))),
    "TREC": _spec("TREC", "TREC", "downstream", "kfold", "downstream/TREC/train_5500.label",
                  "downstream/TREC/TREC_10.label"),
    "MRPC": _spec("MRPC", "MRPC", "downstream", "kfold", "downstream/MRPC/msr_paraphrase_train.txt",
                  "downstream/MRPC/msr_paraphrase_test.txt"),
    "SICK-E": _spec("SICK-E", "SICKEntailment", "downstream", "split", *_SICK),
    "SICK-R": _spec("SICK-R", "SICKRelatedness", "downstream", "relatedness", *_SICK),
    "STS-B": _spec("STS-B", "STSBenchmark", "downstream", "relatedness", *_STSB),
    "SNLI": _spec("SNLI", "SNLI", "downstream", "split",
                  *(f"downstream/SNLI/{p}.{s}" for s in ("train", "dev", "test") for p in ("s1", "s2", "labels"))),
    **{year.upper(): _spec(year.upper(), year.upper(), "sts", "sts",
                           *(f"downstream/STS/{year.upper()}-en-test/STS.{kind}.{sub}.txt"
                             for sub in subsets for kind in ("input", "gs")))
       for year, subsets in STS_SUBSETS.items()},
    **{t: _spec(t, senteval_name, "probing", "split", f"probing/{file}")
       for t, (senteval_name, file) in PROBING_FILES.items()},
}
GROUPS: Dict[str, Tuple[str, ...]] = {
    group: tuple(name for name, spec in TASKS.items() if spec.group == group)
    for group in ("downstream", "sts", "probing")
}
_LOADERS: Dict[str, Callable[[str], TaskData]] = {
    **{t: (lambda data_path, t=t: load_binary(data_path, t)) for t in BINARY_FILES},
    "SST2": lambda data_path: load_sst(data_path, 2),
    "SST5": lambda data_path: load_sst(data_path, 5),
    "TREC": load_trec,
    "MRPC": load_mrpc,
    "SICK-E": load_sick_entailment,
    "SICK-R": load_sick_relatedness,
    "STS-B": load_sts_benchmark,
    "SNLI": load_snli,
    **{y.upper(): (lambda data_path, y=y.upper(): load_sts_year(data_path, y)) for y in STS_SUBSETS},
    **{t: (lambda data_path, t=t: load_probing(data_path, t)) for t in PROBING_FILES},
}


def canonical_task_name(name: str) -> str:
    """A task's canonical name from its own or SentEval's name, case-insensitively.

    Raises:
        UserError: for an unknown name, listing the valid ones.
    """
    lookup = {}
    for spec in TASKS.values():
        lookup[spec.name.lower()] = spec.name
        lookup[spec.senteval_name.lower()] = spec.name
    lookup["stsb"] = "STS-B"
    key = name.strip().lower()
    if key not in lookup:
        raise UserError(f"Unknown SentEval task {name!r}; expected one of {list(TASKS)}, SentEval's names "
                         f"(e.g. SICKRelatedness, Length) or a group {sorted(GROUPS)} or 'all'. "
                         "COCO image-caption retrieval is not supported.")
    return lookup[key]


def missing_files(data_path: str, task: str) -> List[str]:
    """The files `task` needs that are not under `data_path`."""
    root = data_path.rstrip("/")
    return [f"{root}/{f}" for f in TASKS[task].files if not tf.io.gfile.exists(f"{root}/{f}")]


def select_tasks(names: Optional[Sequence[str]], data_path: str) -> Tuple[List[str], Dict[str, str]]:
    """The tasks to run, and the skipped ones with the reason.

    Args:
        names: task names, SentEval names, group names ("downstream", "sts",
            "probing") or "all"; None or empty for every task whose files are
            present. An explicitly named task is always returned (its loader then
            reports missing files); a group or "all" keeps only present tasks.
        data_path: str. The data root.

    Returns:
        (canonical names in TASKS order, {skipped task: reason}).
    """
    requested: List[str] = []
    explicit = set()
    for name in [n for n in names or [] if n.strip()] or ["all"]:
        key = name.strip().lower()
        if key == "all":
            requested += list(TASKS)
        elif key in GROUPS:
            requested += GROUPS[key]
        else:
            task = canonical_task_name(name)
            requested.append(task)
            explicit.add(task)
    chosen, skipped = [], {}
    for task in TASKS:
        if task not in requested:
            continue
        missing = missing_files(data_path, task)
        if missing and task not in explicit:
            more = f" and {len(missing) - 1} more file(s)" if len(missing) > 1 else ""
            skipped[task] = f"missing {missing[0]}{more}"
            continue
        chosen.append(task)
    return chosen, skipped


def load_task(data_path: str, task: str) -> TaskData:
    """Loads a task by (canonical or SentEval) name.

    Raises:
        FileNotFoundError: naming the missing file or folder and pointing to the README.
        UserError: naming the file and line of a malformed line.
    """
    return _LOADERS[canonical_task_name(task)](data_path)
