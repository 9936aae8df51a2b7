"""The history stays readable: every commit from here on has a subject of at most 72 characters.

Commits up to HISTORY_RULE_FROM predate the rule and are left as they are (main's history is
never rewritten). The check runs in the suite, so a commit that breaks it fails CI.
"""

import os
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The last commit before the rule; everything after it is checked.
HISTORY_RULE_FROM = "0311707"
MAX_SUBJECT = 72
# Commits after the rule that broke it and were committed to main before this check caught them: main's history is
# never rewritten, so each is named here by its full hash, and only these are let through.
LANDED_EXCEPTIONS = {
    "306932dd4e23724542bf209cfff6d4ce123cde02",  # a merge subject of 88 characters
    "85ec8ae88e1798f833abca52a995953cd05630ef",  # 73 characters
    "61d62f44769f6ba2e2c0955386baa3915efba883",  # 74 characters
    "35ab489ba69b16d347955fd748f56de5ebdc6075",  # 74 characters
    "bf5102cf54a8965f92dfb18ec0621330ccb8e20b",  # 76 characters
    "4ba8116e11fa62592b563e1f55ed8a18b10d2028",  # 74 characters
    "cf263cc73d49107e2c6d7f27978874da3ab0b6ea",  # 73 characters
}


def subject_problems(subjects):
    """(subject, why) for each commit subject that breaks the rule."""
    problems = []
    for subject in subjects:
        if len(subject) > MAX_SUBJECT:
            problems.append((subject, f"{len(subject)} characters (at most {MAX_SUBJECT}: the what; the why goes "
                                      "in the body)"))
        elif not subject.strip():
            problems.append((subject, "empty"))
        elif subject.rstrip().endswith("."):
            problems.append((subject, "ends with a period"))
    return problems


def test_the_rule_fails_a_long_subject_and_passes_a_short_one():
    assert subject_problems(["Read ST 6 pooling configs"]) == []
    assert [why for _, why in subject_problems(["x" * 73, "Fix a thing.", ""])] == [
        "73 characters (at most 72: the what; the why goes in the body)", "ends with a period", "empty"]


def _git(*args):
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout


def test_commits_after_the_rule_have_short_subjects():
    try:
        known = subprocess.run(["git", "cat-file", "-e", f"{HISTORY_RULE_FROM}^{{commit}}"], cwd=ROOT).returncode == 0
        # A shallow clone without the rule's start checks the newest commit only.
        out = _git("log", "--format=%H %s", f"{HISTORY_RULE_FROM}..HEAD" if known else "-1")
    except (OSError, subprocess.CalledProcessError) as e:
        pytest.fail(f"git log failed in {ROOT} ({e}); the suite runs in a clone with its history.")
    commits = [line.partition(" ") for line in out.splitlines()]
    problems = subject_problems([subject for sha, _, subject in commits if sha not in LANDED_EXCEPTIONS])
    assert not problems, "Commit subjects to shorten:\n" + "\n".join(f"{s!r}: {why}" for s, why in problems)
