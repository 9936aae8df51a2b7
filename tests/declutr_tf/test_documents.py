"""DeCLUTR's documents: what its span settings make of them, and span settings that use the rest."""

import dataclasses

import numpy as np
import pytest

from common.errors import UserError
from declutr_tf.documents import describe_lengths, read_documents, suggest_spans, usable_count
from declutr_tf.span_sampling import SpanConfig


def _write_folder(root, lengths):
    """One document of each length (words) per file, in nested folders, a hidden file beside them."""
    for i, n in enumerate(lengths):
        path = root / f"part{i % 2}" / f"doc{i:02d}.{'md' if i % 3 else 'txt'}"
        path.parent.mkdir(parents=True, exist_ok=True)
        words = [f"d{i}w{j}" for j in range(n)]
        path.write_text("\n".join(" ".join(words[k:k + 7]) for k in range(0, n, 7)) + "\n")
    (root / ".draft.txt").write_text(" ".join(["hidden"] * 500) + "\n")
    return str(root)


def _follow(paths, config, advice):
    """Reads again with the advice applied: the settings a user would pass."""
    advised = dataclasses.replace(config, **advice.settings)
    return read_documents(paths, advised), advised


def test_a_folder_is_counted_and_the_advice_uses_the_rest(tmp_path):
    config = SpanConfig(num_anchors=2, min_span_len=4, max_span_len=10)  # documents need 40 words
    folder = _write_folder(tmp_path / "texts", [100, 50, 45, 30, 25, 20, 20, 12, 12, 8])
    documents = read_documents([folder], config)
    assert (len(documents.tokens), documents.skipped_short, documents.files) == (3, 7, 10)
    assert sorted(documents.lengths) == [8, 12, 12, 20, 20, 25, 30, 45, 50, 100]  # one document per file
    summary, counts = describe_lengths(documents, config)
    assert summary == ("Read 10 documents from 10 files; 3 are long enough for --num_anchors=2 --max_span_len=10 "
                       "(at least 40 words); 7 are shorter (median 20 words) and skipped: --num_anchors=1 "
                       "--max_span_len=6 would use 9 of the 10.")
    assert counts == {"documents_read": 10, "documents": 3, "skipped_short": 7, "min_document_words": 40,
                      "short_median_words": 20, "suggestion": "--num_anchors=1 --max_span_len=6",
                      "suggestion_uses": 9}
    # Following the advice uses what it said, and no further advice is given.
    followed, advised = _follow([folder], config, suggest_spans(documents.lengths, config))
    assert len(followed.tokens) == 9
    summary, counts = describe_lengths(followed, advised)
    assert summary.endswith("1 is shorter (median 8 words) and skipped.") and counts["suggestion"] is None


def test_lowering_max_span_len_comes_first_and_is_the_largest_that_works(tmp_path):
    config = SpanConfig(num_anchors=2, min_span_len=4, max_span_len=10)
    path = tmp_path / "docs.txt"  # a file: one document per line
    path.write_text("\n".join(" ".join(["w"] * n) for n in [100] * 5 + [30] * 5) + "\n")
    documents = read_documents([str(path)], config)
    advice = suggest_spans(documents.lengths, config)
    assert advice.settings == {"max_span_len": 7} and advice.usable == 10
    assert usable_count(documents.lengths, dataclasses.replace(config, max_span_len=8)) == 5
    assert len(_follow([str(path)], config, advice)[0].tokens) == 10


def test_all_too_short_is_one_line_whose_advice_works(tmp_path):
    config = SpanConfig(num_anchors=1, min_span_len=8, max_span_len=10)  # documents need 20 words
    folder = _write_folder(tmp_path / "texts", [6] * 4)
    with pytest.raises(UserError) as error:
        read_documents([folder], config)
    message = str(error.value)
    assert message == ("No document is long enough for DeCLUTR: read 4 documents from 4 files, all shorter than the "
                       "20 words that --num_anchors=1 --max_span_len=10 need (median 6 words); --min_span_len=3 "
                       "--max_span_len=3 would use 4 of them, or give longer documents.")
    advised = dataclasses.replace(config, min_span_len=3, max_span_len=3)
    assert len(read_documents([folder], advised).tokens) == 4
    one_word = tmp_path / "one.txt"
    one_word.write_text("a\nb\n")
    with pytest.raises(UserError, match=r"\(median 1 word\); give longer documents\.$"):
        read_documents([str(one_word)], config)
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "blank.txt").write_text("\n")
    with pytest.raises(UserError, match=r"the 1 file read holds no text; expected text files\.$"):
        read_documents([str(empty)], config)


def test_per_line_keeps_a_folder_of_one_document_per_line_files(tmp_path):
    config = SpanConfig(num_anchors=1, min_span_len=2, max_span_len=5)
    (tmp_path / "a.txt").write_text("\n".join(" ".join(["w"] * 12) for _ in range(3)) + "\n")
    (tmp_path / "b.txt").write_text(" ".join(["v"] * 12) + "\n")
    per_line = read_documents([str(tmp_path)], config, "per_line")
    assert (len(per_line.tokens), per_line.files) == (4, 2)
    assert read_documents([str(tmp_path)], config).lengths == [36, 12]


def test_advice_always_reaches_nine_in_ten_and_is_valid():
    rng = np.random.default_rng(0)
    for _ in range(300):
        lengths = rng.integers(1, 3000, size=int(rng.integers(1, 40))).tolist()
        a = int(rng.integers(1, 4))
        low = int(rng.integers(1, 64))
        config = SpanConfig(num_anchors=a, min_span_len=low, max_span_len=int(rng.integers(low, 600)))
        needed = max(1, int(0.9 * len(lengths)))
        advice = suggest_spans(lengths, config)
        if usable_count(lengths, config) >= needed:
            assert advice is None
            continue
        if min(sorted(lengths, reverse=True)[:needed]) < 2:
            assert advice is None  # one-word documents: no span settings fit them
            continue
        advised = dataclasses.replace(config, **advice.settings)  # valid settings, or SpanConfig raises
        assert advice.usable == usable_count(lengths, advised) >= needed
        if set(advice.settings) == {"max_span_len"}:  # the largest that does
            larger = dataclasses.replace(config, max_span_len=advised.max_span_len + 1)
            assert usable_count(lengths, larger) < needed
