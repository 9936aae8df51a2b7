"""The one reader of training tables: CSV, TSV, JSONL, Parquet and saved datasets folders."""

import json
import sys

import numpy as np
import pytest

from common.data.nli import read_nli, read_nli_sources
from common.data.tables import label_ids, parse_columns, parse_labels, read_table
from common.errors import UserError

ROWS = [("a man, tall, plays .", "a person plays .", "entailment"),
        ("two dogs run .", "cats sleep .", "contradiction"),
        ("a child eats .", "someone eats .", ""),
        ("a child eats .", "the child is hungry .", "-"),
        ("she sings .", "she is \"quiet\" .", "neutral")]
MAPPING = ["premise:sentence_a", "hypothesis:sentence_b", "label:relation"]


def _write_all(tmp_path):
    """The same five rows as CSV (quoted commas), TSV, JSONL (null label), Parquet and a datasets folder."""
    import csv

    paths = {}
    with open(tmp_path / "pairs.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["id", "sentence_a", "sentence_b", "relation"])
        w.writerows([i, a, b, g] for i, (a, b, g) in enumerate(ROWS))
    paths["csv"] = tmp_path / "pairs.csv"
    (tmp_path / "pairs.tsv").write_text("sentence_a\tsentence_b\trelation\n" + "".join(
        f"{a}\t{b}\t{g}\n" for a, b, g in ROWS))
    paths["tsv"] = tmp_path / "pairs.tsv"
    (tmp_path / "pairs.jsonl").write_text("".join(
        json.dumps({"sentence_a": a, "sentence_b": b, "relation": g or None}) + "\n" for a, b, g in ROWS))
    paths["jsonl"] = tmp_path / "pairs.jsonl"
    import datasets
    import pyarrow as pa
    import pyarrow.parquet as pq

    columns = {"sentence_a": [r[0] for r in ROWS], "sentence_b": [r[1] for r in ROWS], "relation": [r[2] for r in ROWS]}
    pq.write_table(pa.table(columns), tmp_path / "pairs.parquet")
    paths["parquet"] = tmp_path / "pairs.parquet"
    datasets.Dataset.from_dict(columns).save_to_disk(str(tmp_path / "saved"))
    paths["datasets"] = tmp_path / "saved"
    return paths


def test_every_format_gives_the_same_pairs_with_columns_mapped(tmp_path):
    columns = parse_columns(MAPPING)
    for kind, path in _write_all(tmp_path).items():
        pairs = read_nli(str(path), columns=columns)
        assert pairs.premises == [r[0] for r in ROWS], kind
        assert pairs.hypotheses[4] == 'she is "quiet" .', kind
        assert pairs.labels.tolist() == [0, 2, -1, -1, 1], kind
        assert pairs.report(3) == {"read": 5, "pairs": 5, "labelled": 3, "per_class": [1, 1, 1], "unlabelled": 2,
                                   "dropped_empty_sentence": 0}, kind


def test_without_columns_a_foreign_header_is_one_line_naming_the_columns_and_the_flag(tmp_path):
    path = _write_all(tmp_path)["csv"]
    with pytest.raises(UserError, match=r"pairs.csv: no column for 'premise' .*the file has \['id', 'sentence_a', "
                                        r"'sentence_b', 'relation'\]. Map it with --columns=premise:<column>"):
        read_nli(str(path))
    with pytest.raises(UserError, match=r"Correct --columns: premise:<one of those columns>"):
        read_nli(str(path), columns=parse_columns(["premise:sentence_x"]))


def test_the_toolkit_field_names_and_class_ids_read_without_flags(tmp_path):
    """A Hugging Face style file: premise / hypothesis / label with ids 0..2 and -1."""
    path = tmp_path / "hf.jsonl"
    path.write_text("".join(json.dumps({"premise": f"p{i}", "hypothesis": f"h{i}", "label": y}) + "\n"
                            for i, y in enumerate([0, 1, 2, -1])))
    assert read_nli(str(path)).labels.tolist() == [0, 1, 2, -1]


def test_other_label_sets_and_unknown_labels(tmp_path):
    path = tmp_path / "para.csv"
    path.write_text("sentence1,sentence2,label\na,b,paraphrase\nc,d,other\ne,f,\ng,h,1\n")
    names = parse_labels(["paraphrase", "other"], ())
    assert read_nli(str(path), labels=names).labels.tolist() == [0, 1, -1, 1]
    with pytest.raises(UserError, match=r"para.csv: no label in column 'label' is one of the labels \['entailment', "
                                        r"'neutral', 'contradiction'\]; it holds \['1', 'other', 'paraphrase'\]\..*"
                                        r"--labels=1,other,paraphrase"):
        read_nli(str(path))
    # Among labels that are known, an unknown one is a typo: its file and line are named.
    path.write_text("sentence1,sentence2,label\na,b,paraphrase\nc,d,othr\n")
    with pytest.raises(UserError, match=r"para.csv:3: unknown label 'othr'; expected one of \['paraphrase', 'other'\]"):
        read_nli(str(path), labels=names)
    for bad in (["x"], ["a", "a"], ["a", ""], ["a", "-"]):
        with pytest.raises(UserError, match=r"--labels"):
            parse_labels(bad, ())


def test_bad_rows_name_file_and_line_and_empty_sentences_are_counted(tmp_path):
    csv_path = tmp_path / "bad.csv"
    csv_path.write_text("sentence1,sentence2,gold_label\na,b,entailment\nc,d,e,f\n")
    with pytest.raises(UserError, match=r"bad.csv:3: expected 3 comma-separated columns as the header has, got 4"):
        read_nli(str(csv_path))
    jsonl = tmp_path / "bad.jsonl"
    jsonl.write_text('{"sentence1": "a", "sentence2": "b"}\n{"sentence1": "c"}\n')
    with pytest.raises(UserError, match=r"bad.jsonl:2: no 'sentence2' in this row"):
        read_nli(str(jsonl))
    jsonl.write_text('{"sentence1": "a", "sentence2": "b"}\n[1, 2]\n')
    with pytest.raises(UserError, match=r"bad.jsonl:2: expected a JSON object per line"):
        read_nli(str(jsonl))
    empty = tmp_path / "empty.csv"
    empty.write_text("sentence1,sentence2,gold_label\na,,entailment\nc,d,neutral\n")
    pairs = read_nli(str(empty))
    assert (len(pairs), pairs.dropped, pairs.read) == (1, 1, 2)
    (tmp_path / "x.xlsx").write_text("")
    with pytest.raises(UserError, match=r"x.xlsx: unknown table format; expected .csv, .tsv"):
        read_nli(str(tmp_path / "x.xlsx"))


def test_columns_flag_entries_are_checked():
    assert parse_columns(["premise:a", "label:b c"]) == {"premise": "a", "label": "b c"}
    for bad, message in ((["premise"], "expected field:column"), (["premise:a", "premise:b"], "twice"),
                         (["sentence:a"], r"maps \['sentence'\], which this data does not use")):
        with pytest.raises(UserError, match=message):
            parse_columns(bad, ("premise", "hypothesis", "label"))


def test_headerless_pair_files_read_positionally_only_where_allowed(tmp_path):
    path = tmp_path / "pairs.tsv"
    path.write_text("a b\tc d\textra\ne f\tg h\n")
    table = read_table(str(path), ("sentence1", "sentence2"), positional=True)
    assert table.fields["sentence1"] == ["a b", "e f"] and table.lines == [1, 2]
    with pytest.raises(UserError, match=r"no column for 'sentence1'"):
        read_table(str(path), ("sentence1", "sentence2"))


def test_a_missing_extra_names_the_package(tmp_path, monkeypatch):
    paths = _write_all(tmp_path)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(UserError, match=r"Reading Parquet files needs the optional package pyarrow: pip install "
                                        r"pyarrow==\d"):
        read_nli(str(paths["parquet"]), columns=parse_columns(MAPPING))
    monkeypatch.setitem(sys.modules, "datasets", None)
    with pytest.raises(UserError, match=r"needs the optional package datasets: pip install datasets==\d"):
        read_nli(str(paths["datasets"]), columns=parse_columns(MAPPING))


def test_label_ids_of_a_table(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text('{"y": "b"}\n{"y": null}\n{"y": 0}\n{}\n')
    table = read_table(str(path), ("y",), optional=("y",))
    assert label_ids(table, "y", ("a", "b")).tolist() == [1, -1, 0, -1]


def test_sources_concatenate_and_count(tmp_path):
    paths = _write_all(tmp_path)
    both = read_nli_sources([str(paths["csv"]), str(paths["jsonl"])], columns=parse_columns(MAPPING))
    assert len(both) == 10 and both.read == 10 and np.bincount(both.labels[both.labels >= 0]).tolist() == [2, 2, 2]


BOM = "\ufeff"


def test_a_byte_order_mark_is_not_part_of_the_first_column_or_cell(tmp_path):
    """Excel and Microsoft's MRPC start files with U+FEFF: the first column is still found by its name."""
    rows = [("a man plays .", "a person plays .", "1"), ("two dogs run .", "cats sleep .", "0")]
    (tmp_path / "p.tsv").write_text(BOM + "Quality\t#1 String\t#2 String\n" + "".join(
        f"{y}\t{a}\t{b}\n" for a, b, y in rows), encoding="utf-8")
    (tmp_path / "p.csv").write_text(BOM + "Quality,#1 String,#2 String\n" + "".join(
        f"{y},{a},{b}\n" for a, b, y in rows), encoding="utf-8")
    (tmp_path / "p.jsonl").write_text(BOM + "".join(
        json.dumps({"Quality": y, "#1 String": a, "#2 String": b}) + "\n" for a, b, y in rows), encoding="utf-8")
    columns = parse_columns(["premise:#1 String", "hypothesis:#2 String", "label:Quality"])
    for name in ("p.tsv", "p.csv", "p.jsonl"):
        pairs = read_nli(str(tmp_path / name), columns=columns, labels=("0", "1"))
        assert pairs.labels.tolist() == [1, 0] and pairs.premises[0] == "a man plays .", name
    # Positional pair files: the first sentence does not start with the mark.
    (tmp_path / "two.tsv").write_text(BOM + "a b\tc d\n", encoding="utf-8")
    assert read_table(str(tmp_path / "two.tsv"), ("sentence1", "sentence2"), positional=True).fields["sentence1"] == [
        "a b"]


def test_a_column_named_in_columns_must_exist_even_for_an_optional_label(tmp_path):
    path = tmp_path / "p.tsv"
    path.write_text("Quality\tfirst\tsecond\n1\ta\tb\n")
    with pytest.raises(UserError, match=r"p.tsv: no column for 'label' \(looked for \['Qualty'\]\); the file has "
                                        r"\['Quality', 'first', 'second'\]\. Correct --columns: "
                                        r"label:<one of those columns>\.$"):
        read_nli(str(path), columns=parse_columns(["premise:first", "hypothesis:second", "label:Qualty"]))
    # Unnamed, an absent label column still means unlabelled pairs (--unlabeled_data, pair files).
    unlabelled = tmp_path / "u.tsv"
    unlabelled.write_text("premise\thypothesis\na\tb\n")
    assert read_nli(str(unlabelled)).labels.tolist() == [-1]


def test_label_cells_that_match_no_label_name_the_values_and_the_flags(tmp_path):
    path = tmp_path / "p.tsv"
    path.write_text("label\tpremise\thypothesis\tid\n" + "".join(f"{i % 2}\ta{i}\tb{i}\t{900 + i}\n"
                                                                   for i in range(30)) + "\tc\td\t999\n")
    # 0/1 cells against the three NLI names would read as entailment/neutral: refused, naming --labels.
    with pytest.raises(UserError) as error:
        read_nli(str(path))
    message = str(error.value)
    assert message == (f"{path}: no label in column 'label' is one of the labels ['entailment', 'neutral', "
                       "'contradiction']; it holds ['0', '1']. Expected the --labels names (or class ids 0-2 of every "
                       "class): if they are your task's labels, name them in class-id order: --labels=0,1; if 'label' "
                       "is not the label column, map the right one with --columns=label:<column>.")
    # The advice works.
    labels = parse_labels(message.split("--labels=")[1].split(";")[0].split(","), ())
    assert read_nli(str(path), labels=labels).labels.tolist() == [0, 1] * 15 + [-1]
    # The wrong column (many values): only --columns is advised.
    with pytest.raises(UserError, match=r"it holds \['900', '901', .*'\.\.\. \(31 in all\)'\]\..*so many values "
                                        r"suggest 'id' is not the label column: map the right one with "
                                        r"--columns=label:<column>\.$"):
        read_nli(str(path), columns={"label": "id"}, labels=labels)
    # Class ids that name every class stay class ids (a datasets export written as CSV).
    ids = tmp_path / "ids.csv"
    ids.write_text("label,premise,hypothesis\n0,a,b\n1,c,d\n2,e,f\n")
    assert read_nli(str(ids)).labels.tolist() == [0, 1, 2]
