"""bench/pages.py: a results page names the commit it ran at, marked when code had uncommitted changes
(but not for the page's own files, which the benchmark's earlier run rewrote)."""

import subprocess

from bench import pages


def _git(*args, cwd):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def test_the_pages_own_folder_does_not_mark_the_commit(tmp_path, monkeypatch):
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "README.md").write_text("old page\n")
    (tmp_path / "code.py").write_text("x = 1\n")
    _git("init", "-q", cwd=tmp_path)
    _git("add", ".", cwd=tmp_path)
    _git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "start", cwd=tmp_path)
    monkeypatch.chdir(tmp_path)
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert pages.commit() == head
    (tmp_path / "results" / "README.md").write_text("new page\n")
    assert pages.commit() == f"{head} (with uncommitted changes)"
    assert pages.commit("results") == head == pages.commit(str(tmp_path / "results"))
    (tmp_path / "code.py").write_text("x = 2\n")
    assert pages.commit("results") == f"{head} (with uncommitted changes)"
    assert pages.commit("/elsewhere/results") == f"{head} (with uncommitted changes)"  # outside the checkout
