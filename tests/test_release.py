"""The release's version is written once per place and they agree: CHANGELOG.md's newest section,
pyproject.toml and `common.__version__`."""

import os
import re

import common

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEADING = re.compile(r"^## (\d+\.\d+\.\d+) \((?:before )?(\d{4}-\d{2}-\d{2})\)", re.M)


def test_every_changelog_section_names_a_version_and_a_date_newest_first():
    text = open(os.path.join(ROOT, "CHANGELOG.md"), encoding="utf-8").read()
    sections = re.findall(r"^## .*$", text, re.M)
    found = HEADING.findall(text)
    assert sections and len(found) == len(sections), [s for s in sections if not HEADING.match(s)]
    versions = [tuple(int(x) for x in v.split(".")) for v, _ in found]
    assert versions == sorted(versions, reverse=True) and len(set(versions)) == len(versions)


def test_the_package_and_the_module_carry_the_newest_version():
    newest = HEADING.search(open(os.path.join(ROOT, "CHANGELOG.md"), encoding="utf-8").read()).group(1)
    pyproject = open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8").read()
    assert re.search(r'^version = "([^"]+)"', pyproject, re.M).group(1) == newest
    assert common.__version__ == newest
