"""Documents from files and folders: one per line of a file, one per file of a folder."""

import pytest

from common.data.documents import document_paths, read_document_files
from common.errors import UserError


def _folder(root):
    """A folder as people keep text: nested, .txt and .md, with hidden and other files beside them."""
    (root / "b-chapter.txt").write_text("Second chapter,\nits second line.\n\n")
    (root / "a-notes.md").write_text("# Notes\n\nA paragraph\n  that wraps.\n")
    (root / "part2").mkdir()
    (root / "part2" / "c.TXT").write_text("nested one\n")
    (root / "part2" / "empty.txt").write_text("\n  \n")
    (root / "part2" / "z.json").write_text("{}")
    (root / ".hidden.txt").write_text("never read\n")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD.txt").write_text("never read either\n")
    (root / "part2" / ".cache").mkdir()
    (root / "part2" / ".cache" / "x.md").write_text("nor this\n")
    return root


def test_a_folder_is_one_document_per_file_recursive_sorted_hidden_left_out(tmp_path):
    (tmp_path / "texts").mkdir()
    files = read_document_files([str(_folder(tmp_path / "texts"))])
    assert [f.name for f in files] == ["a-notes.md", "b-chapter.txt", "part2/c.TXT", "part2/empty.txt"]
    assert {f.layout for f in files} == {"per_file"}
    assert [f.documents for f in files] == [["# Notes A paragraph that wraps."], ["Second chapter, its second line."],
                                            ["nested one"], []]
    assert files[2].path == str(tmp_path / "texts" / "part2" / "c.TXT")


def test_a_file_given_directly_is_one_document_per_line(tmp_path):
    path = tmp_path / "docs.txt"
    path.write_text("first document\n\n  second one \nthird\n")
    (file,) = read_document_files([str(path)])
    assert file.layout == "per_line" and file.documents == ["first document", "  second one ", "third"]
    (whole,) = read_document_files([str(path)], "per_file")
    assert whole.documents == ["first document second one third"]


def test_per_line_reads_a_folder_of_one_document_per_line_files(tmp_path):
    (tmp_path / "x.txt").write_text("one\ntwo\n")
    (tmp_path / "y.txt").write_text("three\n")
    files = read_document_files([str(tmp_path)], "per_line")
    assert [(f.name, f.documents) for f in files] == [("x.txt", ["one", "two"]), ("y.txt", ["three"])]


def test_paths_keep_their_order_and_errors_say_what_to_do(tmp_path):
    (tmp_path / "b.txt").write_text("b\n")
    (tmp_path / "a.txt").write_text("a\n")
    assert [p[1] for p in document_paths(str(tmp_path) + "/")] == ["a.txt", "b.txt"]
    files = read_document_files([str(tmp_path / "b.txt"), str(tmp_path / "a.txt")])
    assert [f.documents for f in files] == [["b"], ["a"]]
    other = tmp_path / "other"
    other.mkdir()
    (other / "data.csv").write_text("x\n")
    with pytest.raises(UserError, match=r"other: no \.txt or \.md file in this directory or below it \(1 other "
                                        r"files\); expected a folder of text files"):
        read_document_files([str(other)])
    with pytest.raises(FileNotFoundError, match="Documents not found: .*missing; see docs/data.md"):
        read_document_files([str(tmp_path / "missing")])


def test_invalid_utf8_in_a_folder_names_the_file(tmp_path):
    (tmp_path / "good.txt").write_text("fine\n")
    (tmp_path / "bad.md").write_bytes(b"caf\xe9\n")
    with pytest.raises(UserError, match=r"bad\.md:1: invalid UTF-8 \(byte 0xe9 at column 4\)"):
        read_document_files([str(tmp_path)])
