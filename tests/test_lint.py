"""The code stays lint-clean: ruff, with the settings of pyproject.toml ([tool.ruff]), finds nothing.

The check runs in the suite, so a change that adds a finding fails CI. Run it alone with
`python -m ruff check .` at the repository root.
"""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_ruff_finds_nothing():
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", ROOT],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
