"""What every benchmark shares: the machine's load while it ran, and its dated results page.

A benchmark module defines its absl flags in `define_flags()`, called only when it runs
(`if __name__ == "__main__": define_flags(); cli.run(main)`), never at import: several modules
define flags of the same names (`--data_path`, `--seed`), and every bench module must import beside
every other (the tests, a notebook).

A benchmark measures `Load` from its start and ends with `write_page`: `<results_dir>/README.md`
(title, command, commit, machine, date, load, setting, then its table) beside `results.json`, under
docs/benchmarks/ by default, so each number has one home (bench/pages.py writes the files).

The load average counts a benchmark's own threads, so it cannot tell an idle machine running a
2-thread benchmark from a loaded one. The readers below give the machine's busy CPU time and a
process's own; their difference over a stretch is what everything else used (Linux /proc).
"""

from __future__ import annotations

import os
import time
from typing import Any, Dict, Optional, Sequence

from bench import pages


# === CPU accounting ===

def machine_busy_ticks():
    """Busy CPU time of the whole machine (clock ticks, all CPUs) from /proc/stat; None off Linux."""
    try:
        with open("/proc/stat", encoding="utf-8") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    # user nice system idle iowait irq softirq steal ...: everything but idle and iowait.
    return sum(fields[:8]) - fields[3] - fields[4]


def process_ticks(pid="self") -> int:
    """CPU time (clock ticks) of a process and of its children it has waited for; 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0
    return sum(int(x) for x in fields[11:15])  # utime stime cutime cstime (fields 14-17 of proc(5))


def other_cores(before, after) -> float:
    """Cores other processes used on average between two `(wall seconds, machine busy ticks, own ticks)`
    readings: the machine's busy time minus one's own, per wall second."""
    (wall0, busy0, own0), (wall1, busy1, own1) = before, after
    ticks = os.sysconf("SC_CLK_TCK")
    return round(max(0.0, ((busy1 - busy0) - (own1 - own0)) / ticks / max(wall1 - wall0, 1e-6)), 2)


def busy_seconds(invocations: Dict[str, Dict[str, float]]) -> float:
    """Length of the union of the invocations' [start, start + seconds] intervals (parallel
    invocations on one root count once)."""
    total, end = 0.0, float("-inf")
    for start, stop in sorted((i["start"], i["start"] + i["seconds"]) for i in invocations.values()):
        if stop > end:
            total += stop - max(start, end)
            end = stop
    return total


class Load:
    """The machine's load over a benchmark: the 1-minute load average when it started, and the CPU
    other processes used since (the machine's busy time minus this process's and its waited-for
    children's, e.g. a reference side run as a subprocess)."""

    def __init__(self):
        self.load1 = os.getloadavg()[0]
        self.start = (time.time(), machine_busy_ticks(), process_ticks())

    def other_cores(self) -> Optional[float]:
        """Cores other processes used on average since the start; None off Linux."""
        busy = machine_busy_ticks()
        if busy is None or self.start[1] is None:
            return None
        return other_cores(self.start, (time.time(), busy, process_ticks()))

    def record(self) -> Dict[str, Any]:
        return {"load1_at_start": round(self.load1, 2), "other_cores": self.other_cores(),
                "seconds": round(time.time() - self.start[0], 1)}

    def line(self) -> str:
        """The page's load bullet."""
        others = self.other_cores()
        during = "" if others is None else f"; CPU used by other processes during the run {others:.2f} cores on average"
        return f"Load: 1-minute load average {self.load1:.2f} at the start{during}"


# === The results page ===

def write_page(results_dir: str, title: str, module: str, body: Sequence[str], data: Any, load: Load = None,
               setting: Sequence[str] = ()) -> str:
    """Writes the benchmark's dated page and its JSON into `results_dir`; returns the page's text.

    Args:
        results_dir: str. The page's folder (README.md and results.json).
        title: str. The page's title.
        module: str. The benchmark as run with `python -m` (`bench.ablation`); the command is this
            process's arguments.
        body: sequence of str. The page's lines after its header: tables, notes.
        data: JSON-serialisable. The numbers behind the page; the load is added as "load".
        load: Load. Measured from the benchmark's start; None for one that reports its own load in `setting`.
        setting: sequence of str. Further header bullets (what was measured, with what).
    """
    extra = ([load.line()] if load is not None else []) + list(setting)
    lines = pages.header(title, module, pages.command(module), extra, results_dir) + list(body)
    if load is not None and isinstance(data, dict):
        data = {**data, "load": load.record()}
    return pages.write(results_dir, lines, data)
