"""Tiny SentEval data roots in SentEval's exact file formats, written by the tests."""

from __future__ import annotations

import os

from fixtures import write_senteval_snli, write_sts_root

NOUNS = ["movie", "plot", "camera", "lens", "battery", "screen", "actor", "story", "song", "menu", "phone", "car"]
GOOD = ["great", "wonderful", "superb", "lovely", "excellent", "brilliant"]
BAD = ["awful", "terrible", "boring", "poor", "horrible", "dreadful"]

# Counts per file, used by the tests.
BINARY_LINES = 12  # per polarity file (CR's files have one more, empty, line)
SST_SIZES = {"train": 20, "dev": 10, "test": 10}
TREC_TRAIN_PER_CLASS, TREC_TEST_PER_CLASS = 6, 2
MRPC_SIZES = {"train": 16, "test": 8}
SICK_SIZES = {"train": 20, "dev": 10, "test": 10}
PROBING_SIZES = {"tr": 24, "va": 8, "te": 8}
TREC_CLASSES = ("ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM")


def _write(path: str, text: str, encoding: str = "utf-8") -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding=encoding, newline="") as f:
        f.write(text)


def _sentence(i: int, positive: bool, extra: int = 0) -> str:
    adjective = (GOOD if positive else BAD)[i % 6]
    return " ".join(["the", NOUNS[i % len(NOUNS)], "is", adjective] + ["really"] * (i % 3 + extra) + ["."])


def write_binary(root: str) -> None:
    """MR, CR, SUBJ, MPQA: one sentence per line; CR gets a trailing empty line per file, as the real one."""
    files = {"MR": ("rt-polarity.pos", "rt-polarity.neg"), "CR": ("custrev.pos", "custrev.neg"),
             "SUBJ": ("subj.objective", "subj.subjective"), "MPQA": ("mpqa.pos", "mpqa.neg")}
    for task, (first, second) in files.items():
        d = os.path.join(root, "downstream", task)
        tail = "\n" if task == "CR" else ""
        _write(os.path.join(d, first), "".join(_sentence(i, True) + " \n" for i in range(BINARY_LINES)) + tail)
        _write(os.path.join(d, second), "".join(_sentence(i, False) + " \n" for i in range(BINARY_LINES)) + tail)


def write_sst(root: str) -> None:
    for split, n in SST_SIZES.items():
        binary = "".join(f"{_sentence(i, i % 2 == 1)} \t{i % 2}\n" for i in range(n))
        _write(os.path.join(root, "downstream", "SST", "binary", f"sentiment-{split}"), binary)
        fine = "".join(f"{i % 5} {_sentence(i, i % 5 >= 3, extra=i % 5)}\n" for i in range(n))
        _write(os.path.join(root, "downstream", "SST", "fine", f"sentiment-{split}"), fine)


def write_trec(root: str) -> None:
    """TREC in Latin-1, with one non-ASCII byte as in the real train file."""
    d = os.path.join(root, "downstream", "TREC")
    for name, per_class in (("train_5500.label", TREC_TRAIN_PER_CLASS), ("TREC_10.label", TREC_TEST_PER_CLASS)):
        lines = []
        for i in range(per_class):
            for c, label in enumerate(TREC_CLASSES):
                words = " ".join([NOUNS[(i + c) % len(NOUNS)]] * (c + 1))
                lines.append(f"{label}:other What is {label.lower()} about {words} number {i} ?\n")
        if name == "train_5500.label":
            lines[4] = "LOC:city Which city has a caf\u00e9 called sister city ?\n"
        _write(os.path.join(d, name), "".join(lines), encoding="latin-1")


def write_mrpc(root: str) -> None:
    d = os.path.join(root, "downstream", "MRPC")
    for split, n in MRPC_SIZES.items():
        rows = ["\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"]
        for i in range(n):
            a = _sentence(i, True)
            b = a if i % 2 else _sentence(i + 5, False)
            rows.append(f"{i % 2}\t{1000 + i}\t{2000 + i}\t{a}\t{b}\n")
        _write(os.path.join(d, f"msr_paraphrase_{split}.txt"), "".join(rows))


def write_sick(root: str) -> None:
    labels = ("NEUTRAL", "ENTAILMENT", "CONTRADICTION")
    names = {"train": "SICK_train.txt", "dev": "SICK_trial.txt", "test": "SICK_test_annotated.txt"}
    for split, n in SICK_SIZES.items():
        rows = ["pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment\n"]
        for i in range(n):
            score = 1.0 + (i * 0.37) % 4.0
            a, b = _sentence(i, True), _sentence(i + 1, i % 2 == 0)
            rows.append(f"{i + 1}\t{a}\t{b}\t{score:.1f}\t{labels[i % 3]}\n")
        _write(os.path.join(root, "downstream", "SICK", names[split]), "".join(rows))


def write_probing(root: str, name: str = "past_present.txt") -> None:
    """A probing file: "tr|va|te<TAB>label<TAB>sentence" (Tense: PAST / PRES)."""
    rows = []
    for split, n in PROBING_SIZES.items():
        for i in range(n):
            past = i % 2 == 0
            verb = "walked" if past else "walks"
            rows.append(f"{split}\t{'PAST' if past else 'PRES'}\tthe {NOUNS[i % len(NOUNS)]} {verb} home {i} .\n")
    _write(os.path.join(root, "probing", name), "".join(rows))


def write_senteval_root(root: str, snli: bool = True, probing: bool = True) -> str:
    """Every SentEval task this package reads, tiny: transfer, STS12-16, STS-B, SICK, SNLI, Tense."""
    write_sts_root(root)
    write_binary(root)
    write_sst(root)
    write_trec(root)
    write_mrpc(root)
    write_sick(root)
    if snli:
        for split in ("train", "dev", "test"):
            write_senteval_snli(root, split, n=30, seed={"train": 0, "dev": 1, "test": 2}[split])
    if probing:
        write_probing(root)
    return root
