"""Lines a run tells its user as it goes (PAUSE's `data:` line), apart from the log.

Library code never prints: it hands such a line to `notice`. A script whose user reads its stdout
calls `to_stdout()` once, and each line is then printed there as it is, the way the docs show it,
rather than as a log record among TensorFlow's (and only there: the same line twice on one
terminal reads as two events). Elsewhere (the Python API, notebooks, tests) the lines go to
absl's INFO log.
"""

from __future__ import annotations

import sys

from absl import logging

_printing = False


def to_stdout(enabled: bool = True) -> bool:
    """Prints every later notice on stdout (a script's choice, made in its `main`).

    Args:
        enabled: bool. False stops printing them. Defaults to True.

    Returns:
        bool, the choice before this call, for a caller that puts it back.
    """
    global _printing
    previous, _printing = _printing, enabled
    return previous


def notice(line: str) -> None:
    """Prints `line` on stdout where the script asked for it, else logs it (absl INFO).

    Args:
        line: str. One line for the user, e.g. "data: 300 labelled ...".
    """
    if _printing:
        print(line, file=sys.stdout, flush=True)
    else:
        logging.info("%s", line)
