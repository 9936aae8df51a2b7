"""Results pages that benchmarks write themselves: one home per number, with its provenance.

A page is `<results_dir>/README.md` (title, the command that wrote it, commit, machine, date, then
the benchmark's own lines) beside `results.json` (the numbers behind it).
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from typing import Any, List, Sequence


def commit(own: str = "") -> str:
    """The checkout's short commit, marked when tracked files have uncommitted changes; changes under
    `own` (the page's own folder, which an earlier run of the benchmark rewrote) do not count."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
        status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                                text=True, check=True).stdout.splitlines()
        dirty = [line[3:] for line in status]  # porcelain: "XY path", the path from the checkout's root
        if own:
            root = subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True,
                                  check=True).stdout.strip()
            prefix = os.path.relpath(os.path.abspath(own), root).rstrip("/") + "/"
            dirty = [path for path in dirty if not path.startswith(prefix)]
        return head + (" (with uncommitted changes)" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def machine() -> str:
    """CPU model, core count and Python version."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), cpu)
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}"


def command(module: str) -> str:
    """How this process was invoked, as `python -m <module> <arguments>`."""
    return " ".join([f"python -m {module}"] + sys.argv[1:])


def header(title: str, module: str, invoked: str, extra: Sequence[str] = (), results_dir: str = "") -> List[str]:
    """The page's opening lines: title, who writes it, command, commit (its own folder's changes aside),
    machine, date, and `extra` bullets."""
    return [f"# {title}", "", f"Written by `{module.replace('.', '/')}.py`; do not edit by hand.", "",
            f"- Command: `{invoked}`", f"- Commit: {commit(results_dir)}", f"- Machine: {machine()}",
            f"- Written: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}", *[f"- {e}" for e in extra], ""]


def write(results_dir: str, lines: Sequence[str], data: Any) -> str:
    """Writes README.md (the lines) and results.json (`data`) into `results_dir`; returns the page's text."""
    os.makedirs(results_dir, exist_ok=True)
    text = "\n".join(lines).rstrip("\n") + "\n"
    with open(os.path.join(results_dir, "README.md"), "w") as f:
        f.write(text)
    with open(os.path.join(results_dir, "results.json"), "w") as f:
        json.dump(data, f, indent=1)
    return text
