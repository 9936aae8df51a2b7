"""SentEval task loaders on tiny fixtures in SentEval's formats, and on the real data (large)."""

import os

import numpy as np
import pytest

from common.evaluation.senteval import tasks
from senteval_fixtures import (BINARY_LINES, MRPC_SIZES, PROBING_SIZES, SICK_SIZES, SST_SIZES, TREC_TEST_PER_CLASS,
                               TREC_TRAIN_PER_CLASS, write_probing, write_senteval_root)


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return write_senteval_root(str(tmp_path_factory.mktemp("senteval")))


def _is_senteval_sorted(lengths, labels):
    keys = list(zip(lengths, labels))
    return keys == sorted(keys)


@pytest.mark.parametrize("task", ["MR", "CR", "SUBJ", "MPQA"])
def test_binary_tasks_keep_every_line_and_sort_as_senteval(root, task):
    data = tasks.load_task(root, task)
    split = data.splits["all"]
    extra = 2 if task == "CR" else 0  # CR's files end with an empty line, which SentEval keeps
    assert set(data.splits) == {"all"} and data.nclasses == 2
    assert len(split) == 2 * BINARY_LINES + extra and len(split.sentences) == len(split)
    assert np.bincount(split.labels).tolist() == [BINARY_LINES + extra // 2] * 2
    assert _is_senteval_sorted([len(s.split()) for s in split.sentences], split.labels.tolist())
    assert all(s == " ".join(s.split()) for s in split.sentences)  # trailing spaces gone
    if task == "CR":
        assert split.sentences[:2] == ("", "")  # the empty lines sort first
    if task == "SUBJ":  # objective sentences are SentEval's label 1
        assert data.label_names[1] == "objective"


@pytest.mark.parametrize("task,nclasses", [("SST2", 2), ("SST5", 5)])
def test_sst_reads_both_formats(root, task, nclasses):
    data = tasks.load_task(root, task)
    assert data.nclasses == nclasses and {k: len(v) for k, v in data.splits.items()} == SST_SIZES
    assert set(data.splits["train"].labels.tolist()) == set(range(nclasses))
    assert not any("\t" in s or s[:1].isdigit() for s in data.splits["train"].sentences)


def test_trec_reads_latin1_and_coarse_labels(root):
    data = tasks.load_task(root, "TREC")
    assert data.label_names == ("ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM")
    assert len(data.splits["train"]) == 6 * TREC_TRAIN_PER_CLASS and len(data.splits["test"]) == 6 * TREC_TEST_PER_CLASS
    assert np.bincount(data.splits["test"].labels).tolist() == [TREC_TEST_PER_CLASS] * 6
    assert "Which city has a caf\u00e9 called sister city ?" in data.splits["train"].sentences
    assert not any(s.startswith("other ") for s in data.splits["train"].sentences)  # fine label dropped


def test_mrpc_skips_the_header_and_reads_pairs(root):
    data = tasks.load_task(root, "MRPC")
    assert {k: len(v) for k, v in data.splits.items()} == MRPC_SIZES
    train = data.splits["train"]
    assert len(train.first) == len(train.second) == len(train) and set(train.labels.tolist()) == {0, 1}
    assert all(a == b for a, b, y in zip(train.first, train.second, train.labels) if y == 1)
    keys = [(len(a.split()), len(b.split()), y) for a, b, y in zip(train.first, train.second, train.labels)]
    assert keys == sorted(keys)


def test_sick_entailment_and_relatedness_share_the_data_set(root):
    e, r = tasks.load_task(root, "SICK-E"), tasks.load_task(root, "SICKRelatedness")
    assert e.dataset == r.dataset == "SICK" and r.name == "SICK-R"
    assert {k: len(v) for k, v in e.splits.items()} == SICK_SIZES == {k: len(v) for k, v in r.splits.items()}
    assert e.label_names == ("CONTRADICTION", "NEUTRAL", "ENTAILMENT") and set(e.splits["train"].labels) == {0, 1, 2}
    scores = r.splits["train"].labels
    assert scores.dtype == np.float64 and scores.min() >= 1 and scores.max() <= 5
    assert set(e.splits["test"].all_sentences()) == set(r.splits["test"].all_sentences())


def test_sts_benchmark_and_sts_years_reuse_the_sts_loaders(root):
    stsb = tasks.load_task(root, "STSBenchmark")
    assert stsb.name == "STS-B" and {k: len(v) for k, v in stsb.splits.items()} == {"train": 6, "dev": 6, "test": 6}
    sts15 = tasks.load_task(root, "sts15")
    assert set(sts15.splits) == {"answers-forums", "answers-students", "belief", "headlines", "images"}
    assert all(len(p) == 6 for p in sts15.splits.values())  # the unscored 7th pair is skipped


def test_snli_reads_all_three_splits_sorted_by_hypothesis_length(root):
    data = tasks.load_task(root, "SNLI")
    assert data.label_names == ("entailment", "neutral", "contradiction")
    assert {k: len(v) for k, v in data.splits.items()} == {"train": 30, "dev": 30, "test": 30}
    dev = data.splits["dev"]
    keys = [(len(b.split()), len(a.split())) for a, b in zip(dev.first, dev.second)]
    assert keys == sorted(keys)


def test_probing_loader_numbers_sorted_training_labels(root):
    data = tasks.load_task(root, "Tense")
    assert data.label_names == ("PAST", "PRES") and data.nclasses == 2
    assert {k: len(v) for k, v in data.splits.items()} == {tasks.PROBING_SPLITS[k]: n for k, n in PROBING_SIZES.items()}
    train = data.splits["train"]
    past = [s for s, y in zip(train.sentences, train.labels) if y == 0]
    assert past and all("walked" in s for s in past)


def test_malformed_lines_are_reported_with_file_and_line(tmp_path):
    root = str(tmp_path)
    write_probing(root)
    path = os.path.join(root, "probing", "past_present.txt")
    lines = open(path).read().splitlines()
    open(path, "w").write("\n".join(lines[:3] + ["xx\tPAST\tthe sentence ."] + lines[3:]) + "\n")
    with pytest.raises(ValueError, match=r"past_present\.txt:4: expected 'tr\|va\|te"):
        tasks.load_task(root, "Tense")
    open(path, "w").write("\n".join(lines + ["te\tFUTURE\tthe car will go ."]) + "\n")
    with pytest.raises(ValueError, match=rf"past_present\.txt:{len(lines) + 1}: label 'FUTURE'"):
        tasks.load_task(root, "Tense")

    sst = os.path.join(root, "downstream", "SST", "binary")
    os.makedirs(sst)
    for split in ("train", "dev", "test"):
        open(os.path.join(sst, f"sentiment-{split}"), "w").write("good film .\t1\nno label here\n")
    with pytest.raises(ValueError, match=r"sentiment-train:2: expected 'sentence<TAB>label'"):
        tasks.load_task(root, "SST2")

    trec = os.path.join(root, "downstream", "TREC")
    os.makedirs(trec)
    for name in ("train_5500.label", "TREC_10.label"):
        open(os.path.join(trec, name), "w").write("DESC:def What is it ?\nWHAT:x Who ?\n")
    with pytest.raises(ValueError, match=r"train_5500\.label:2: expected 'CLASS:fine question'"):
        tasks.load_task(root, "TREC")


def test_missing_data_points_to_the_readme(tmp_path):
    with pytest.raises(FileNotFoundError, match="docs/data.md"):
        tasks.load_task(str(tmp_path), "MR")
    with pytest.raises(FileNotFoundError, match="docs/data.md"):
        tasks.load_task(str(tmp_path), "SentLen")


def test_task_selection_names_groups_and_availability(tmp_path):
    root = write_senteval_root(str(tmp_path / "full"))
    chosen, skipped = tasks.select_tasks(None, root)
    assert "Tense" in chosen and "SNLI" in chosen and "STS12" in chosen and "MR" in chosen
    assert set(skipped) == set(tasks.GROUPS["probing"]) - {"Tense"}
    assert all(reason.startswith("missing ") for reason in skipped.values())

    partial = write_senteval_root(str(tmp_path / "partial"), snli=False, probing=False)
    chosen, skipped = tasks.select_tasks(["downstream"], partial)
    assert "SNLI" not in chosen and "SNLI" in skipped and "STS12" not in chosen
    chosen, _ = tasks.select_tasks(["snli", "SICKEntailment", "Length", "cr"], partial)
    assert chosen == ["CR", "SICK-E", "SNLI", "SentLen"]  # named tasks stay, in TASKS order; loading reports

    assert tasks.canonical_task_name("bigramshift") == "BShift" and tasks.canonical_task_name("stsb") == "STS-B"
    with pytest.raises(ValueError, match="COCO"):
        tasks.canonical_task_name("ImageCaptionRetrieval")


@pytest.mark.large
def test_real_data_has_senteval_sizes(data_path):
    sizes = {"MR": {"all": 10662}, "CR": {"all": 3775}, "SUBJ": {"all": 10000}, "MPQA": {"all": 10606},
             "SST2": {"train": 67349, "dev": 872, "test": 1821}, "SST5": {"train": 8544, "dev": 1101, "test": 2210},
             "TREC": {"train": 5452, "test": 500}, "MRPC": {"train": 4076, "test": 1725},
             "SICK-E": {"train": 4500, "dev": 500, "test": 4927}, "STS-B": {"train": 5749, "dev": 1500, "test": 1379}}
    for task, expected in sizes.items():
        data = tasks.load_task(data_path, task)
        assert {k: len(v) for k, v in data.splits.items()} == expected, task
    assert sum(len(p) for p in tasks.load_task(data_path, "STS16").splits.values()) == 1186
