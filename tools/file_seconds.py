"""How long each test file takes, read from a JUnit report, for the suite's longest-first file order.

`make test` runs test files on 2-4 workers, a file's tests together (`--dist=loadfile`). xdist hands out
files in the order it is given, so a long file that starts last keeps one worker busy after the other has
finished; `tests/conftest.py` starts the longest files first (longest processing time first) from the
seconds recorded in `tests/file_seconds.json`. Refresh that file after adding or reshaping slow tests:

    make test PYTEST_ARGS="--junitxml=artifacts/junit.xml"
    python -m tools.file_seconds artifacts/junit.xml > tests/file_seconds.json

A stale or missing entry only changes the order in which files start, never which tests run: a file that
is not listed is placed as a file of `DEFAULT_SECONDS`.
"""

from __future__ import annotations

import collections
import json
import sys
import xml.etree.ElementTree as ET
from typing import Dict

# A file with no recorded time (a new one) is placed as a file of this many seconds: most files take less.
DEFAULT_SECONDS = 10.0


def file_seconds(report: str) -> Dict[str, float]:
    """{test file path relative to the repository root: seconds}, from a pytest JUnit XML report.

    Each test case's time (setup, call and teardown, so a module fixture counts where it is first used) is
    added to its file; the file is read from the case's `classname` (`tests.common.test_api` or
    `tests.common.test_api.TestClass`).

    Args:
        report: str. Path of the XML report pytest's `--junitxml` wrote.

    Returns:
        The files, longest first, with their seconds rounded to 0.1 s.

    Example:
        >>> import tempfile
        >>> xml = ('<testsuites><testsuite><testcase classname="tests.test_a" name="t1" time="1.5"/>'
        ...        '<testcase classname="tests.test_a" name="t2" time="2"/>'
        ...        '<testcase classname="tests.sub.test_b.TestB" name="t" time="9"/></testsuite></testsuites>')
        >>> with tempfile.NamedTemporaryFile("w", suffix=".xml", delete=False) as f:
        ...     _ = f.write(xml)
        >>> file_seconds(f.name)
        {'tests/sub/test_b.py': 9.0, 'tests/test_a.py': 3.5}
    """
    totals: Dict[str, float] = collections.defaultdict(float)
    for case in ET.parse(report).getroot().iter("testcase"):
        parts = case.get("classname", "").split(".")
        while parts and not parts[-1].startswith("test_"):
            parts.pop()  # a class's name after the module's
        if not parts:
            continue
        totals["/".join(parts) + ".py"] += float(case.get("time") or 0.0)
    return {name: round(seconds, 1) for name, seconds in sorted(totals.items(), key=lambda kv: (-kv[1], kv[0]))}


def main(argv) -> int:
    if len(argv) != 2:
        sys.stderr.write("usage: python -m tools.file_seconds JUNIT_XML > tests/file_seconds.json\n")
        return 2
    json.dump(file_seconds(argv[1]), sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
