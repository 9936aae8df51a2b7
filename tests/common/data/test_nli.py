import json
import os

import numpy as np
import pytest

from common.data.nli import LABEL_IDS, read_nli, read_nli_sources
from fixtures import NLI_ROWS, write_senteval_snli

OFFICIAL_TXT_HEADER = ["gold_label", "sentence1_binary_parse", "sentence2_binary_parse", "sentence1_parse",
                       "sentence2_parse", "sentence1", "sentence2", "captionID", "pairID", "label1"]
GLUE_HEADER = ["index", "promptID", "pairID", "genre", "sentence1_binary_parse", "sentence2_binary_parse",
               "sentence1_parse", "sentence2_parse", "sentence1", "sentence2", "label1", "gold_label"]


def _write_formats(tmp_path):
    jsonl = tmp_path / "snli_1.0_dev.jsonl"
    jsonl.write_text("".join(json.dumps({"gold_label": g, "sentence1": a, "sentence2": b, "pairID": str(i)}) + "\n"
                             for i, (a, b, g) in enumerate(NLI_ROWS)))
    txt = tmp_path / "multinli_1.0_dev_matched.txt"
    txt.write_text("\t".join(OFFICIAL_TXT_HEADER) + "\n" + "".join(
        "\t".join([g, "( x )", "( y )", "(ROOT x)", "(ROOT y)", a, b, "c1", f"p{i}", g]) + "\n"
        for i, (a, b, g) in enumerate(NLI_ROWS)))
    tsv = tmp_path / "dev_matched.tsv"
    tsv.write_text("\t".join(GLUE_HEADER) + "\n" + "".join(
        "\t".join([str(i), "1", f"{i}n", "fiction", "( x )", "( y )", "(ROOT x)", "(ROOT y)", a, b, g, g]) + "\n"
        for i, (a, b, g) in enumerate(NLI_ROWS)))
    return jsonl, txt, tsv


def test_every_format_reads_the_same_pairs_and_keeps_missing_gold_as_unlabelled(tmp_path):
    expected_labels = [LABEL_IDS.get(g, -1) for _, _, g in NLI_ROWS]
    assert expected_labels[-1] == -1
    for path in _write_formats(tmp_path):
        pairs = read_nli(str(path))
        assert pairs.labels.tolist() == expected_labels, path.name
        assert pairs.premises[1] == NLI_ROWS[1][0] and pairs.hypotheses[1] == NLI_ROWS[1][1]
        assert (pairs.dropped, pairs.read, pairs.labelled) == (0, 7, 6)
    root = write_senteval_snli(str(tmp_path / "data"), "dev", n=30)
    senteval = read_nli("senteval:dev", root)
    assert len(senteval) == 30 and sorted(set(senteval.labels.tolist())) == [0, 1, 2]
    both = read_nli_sources(["senteval:dev", str(tmp_path / "snli_1.0_dev.jsonl")], root)
    assert len(both) == 37 and both.fingerprint() != senteval.fingerprint()


def test_bad_inputs_name_file_and_line(tmp_path):
    jsonl, txt, tsv = _write_formats(tmp_path)
    lines = jsonl.read_text().splitlines()
    lines[3] = lines[3].replace('"entailment"', '"entails"')
    jsonl.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=r"snli_1.0_dev.jsonl:4: unknown label 'entails'"):
        read_nli(str(jsonl))
    no_gold = tmp_path / "no_gold.txt"  # no label column: every pair is unlabelled
    no_gold.write_text("sentence1\tsentence2\nA\tB\n")
    assert read_nli(str(no_gold)).labels.tolist() == [-1]
    bad_header = tmp_path / "no_premise.txt"
    bad_header.write_text("first\tsentence2\nA\tB\n")
    with pytest.raises(ValueError, match=r"no_premise.txt: no column for 'premise' \(looked for \['premise', "
                                         r"'sentence1'\]\); the file has \['first', 'sentence2'\]. Map it with "
                                         r"--columns=premise:<column>"):
        read_nli(str(bad_header))
    short = tmp_path / "short.tsv"
    short.write_text("\t".join(GLUE_HEADER) + "\n0\t1\t2\n")
    with pytest.raises(ValueError, match=r"short.tsv:2: expected at least 12 tab-separated columns, got 3"):
        read_nli(str(short))
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    with pytest.raises(ValueError, match=r"empty.txt: empty file"):
        read_nli(str(empty))
    with pytest.raises(FileNotFoundError, match=r"download_nli.py"):
        read_nli(str(tmp_path / "snli_1.0_train.jsonl"))
    root = write_senteval_snli(str(tmp_path / "data"), "dev", n=6)
    labels = os.path.join(root, "downstream", "SNLI", "labels.dev")
    with open(labels, "a") as f:
        f.write("neutral\n")
    with pytest.raises(ValueError, match=r"s1.dev, s2.dev and labels.dev have 6, 6 and 7 lines"):
        read_nli("senteval:dev", root)
    with pytest.raises(FileNotFoundError, match=r"SNLI/s1.train.*dev and test only"):
        read_nli("senteval:train", root)


@pytest.mark.large
def test_shared_senteval_snli_dev_and_test(data_path):
    pairs = read_nli_sources(["senteval:dev", "senteval:test"], data_path)
    assert len(pairs) == 9842 + 9824
    assert np.bincount(pairs.labels).tolist() == [3329 + 3368, 3235 + 3219, 3278 + 3237]
