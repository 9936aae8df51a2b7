"""Text input: strict UTF-8 with the file and line of a bad byte; lines split on "\\n" only."""

import json

import pytest

from common.data.files import read_lines
from common.data.nli import read_nli


def test_invalid_utf8_names_the_file_line_and_column(tmp_path):
    path = tmp_path / "pairs.tsv"
    path.write_bytes(b"first line\nsecond caf\xe9 line\n")
    with pytest.raises(ValueError, match=r"pairs\.tsv:2: invalid UTF-8 \(byte 0xe9 at column 11\)"):
        read_lines(str(path))


def test_only_newlines_split_lines(tmp_path):
    path = tmp_path / "lines.txt"
    path.write_text("a\u2028b\u0085c\x0cd\r\nsecond\n", encoding="utf-8", newline="")
    assert read_lines(str(path)) == ["a\u2028b\u0085c\x0cd", "second"]


def test_jsonl_sentences_may_hold_line_separators(tmp_path):
    rows = [{"gold_label": "entailment", "sentence1": "a line\u2028separator", "sentence2": "next\u0085line"},
            {"gold_label": "neutral", "sentence1": "form\x0cfeed", "sentence2": "plain"}]
    path = tmp_path / "nli.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    pairs = read_nli(str(path))
    assert pairs.premises == ["a line\u2028separator", "form\x0cfeed"] and len(pairs) == 2
