"""Lines a run tells its user as it goes (PAUSE's `data:` line), apart from the log.

Library code never prints: it hands such a line to `notice`, which logs it (absl INFO, so a run's
`train.log` keeps it). A script whose user reads its stdout calls `to_stdout()` once, and each line
is then also printed there as it is, the way the docs show it, rather than as a log record among
TensorFlow's. Elsewhere (the Python API, notebooks, tests) the lines stay in the log.
"""

from __future__ import annotations

import sys

from absl import logging

_printing = False


def to_stdout(enabled: bool = True) -> None:
    """Prints every later notice on stdout (a script's choice, made in its `main`).

    Args:
        enabled: bool. False stops printing them. Defaults to True.
    """
    global _printing
    _printing = enabled


def notice(line: str) -> None:
    """Logs `line` and, where the script asked for it, prints it on stdout.

    Args:
        line: str. One line for the user, e.g. "data: 300 labelled ...".
    """
    logging.info("%s", line)
    if _printing:
        print(line, file=sys.stdout, flush=True)
