"""The suite's file order: seconds per file read from a JUnit report, and the longest files started first."""

import json
import os
import subprocess
import sys
import types

from conftest import FILE_SECONDS, longest_files_first
from tools.file_seconds import DEFAULT_SECONDS, file_seconds

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _report(tmp_path, cases):
    body = "".join(f'<testcase classname="{c}" name="{n}" time="{t}"/>' for c, n, t in cases)
    path = tmp_path / "junit.xml"
    path.write_text(f'<?xml version="1.0"?><testsuites><testsuite name="pytest">{body}</testsuite></testsuites>')
    return str(path)


def test_a_files_seconds_add_up_its_cases_and_its_classes_cases(tmp_path):
    report = _report(tmp_path, [("tests.common.test_api", "a", 1.5), ("tests.common.test_api", "b", 2.25),
                                ("tests.test_docs.TestLinks", "c", 7), ("tests.test_docs", "d", 0.5),
                                ("tests.bench.test_pages", "e", "")])
    assert file_seconds(report) == {"tests/test_docs.py": 7.5, "tests/common/test_api.py": 3.8,
                                    "tests/bench/test_pages.py": 0.0}
    assert list(file_seconds(report)) == ["tests/test_docs.py", "tests/common/test_api.py", "tests/bench/test_pages.py"]


def test_the_command_writes_json_and_refuses_a_missing_argument(tmp_path):
    report = _report(tmp_path, [("tests.test_x", "a", 3)])
    proc = subprocess.run([sys.executable, "-m", "tools.file_seconds", report], capture_output=True, text=True,
                          cwd=ROOT)
    assert proc.returncode == 0 and json.loads(proc.stdout) == {"tests/test_x.py": 3.0}
    proc = subprocess.run([sys.executable, "-m", "tools.file_seconds"], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 2 and proc.stderr.startswith("usage: python -m tools.file_seconds")


def _items(*names):
    return [types.SimpleNamespace(path=os.path.join(ROOT, *name.split("::")[0].split("/")), nodeid=name)
            for name in names]


def test_files_start_longest_first_each_keeping_its_tests_order_and_an_unlisted_file_counts_as_the_default():
    items = _items("tests/a.py::t1", "tests/b.py::t1", "tests/a.py::t2", "tests/c.py::t1", "tests/new.py::t1",
                   "tests/b.py::t2")
    seconds = {"tests/a.py": 5.0, "tests/b.py": 50.0, "tests/c.py": DEFAULT_SECONDS + 1}
    order = [item.nodeid for item in longest_files_first(items, seconds, DEFAULT_SECONDS)]
    assert order == ["tests/b.py::t1", "tests/b.py::t2", "tests/c.py::t1", "tests/new.py::t1", "tests/a.py::t1",
                     "tests/a.py::t2"]
    assert sorted(order) == sorted(item.nodeid for item in items)  # only the order changes


def test_the_recorded_seconds_name_test_files_that_exist():
    """A renamed or removed file is taken out of tests/file_seconds.json (an unlisted file is merely placed as
    a file of the default length); refresh it as tools/file_seconds.py says."""
    with open(FILE_SECONDS, encoding="utf-8") as f:
        seconds = json.load(f)
    assert seconds and all(isinstance(s, (int, float)) and s >= 0 for s in seconds.values())
    missing = [name for name in seconds if not os.path.isfile(os.path.join(ROOT, name))]
    assert not missing, f"tests/file_seconds.json names files that do not exist: {missing}"


def test_make_test_keeps_the_conftest_order():
    """xdist re-sorts files by their number of tests unless told not to."""
    with open(os.path.join(ROOT, "Makefile"), encoding="utf-8") as f:
        test_recipe = f.read().split("\ntest: setup\n", 1)[1].split("\n\n", 1)[0]
    assert "--dist=loadfile" in test_recipe and "--no-loadscope-reorder" in test_recipe
