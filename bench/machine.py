"""CPU accounting for the benchmarks: how much CPU other processes used while one ran.

The load average counts a benchmark's own threads, so it cannot tell an idle machine running a
2-thread benchmark from a loaded one. These readers give the machine's busy CPU time and a
process's own; their difference over a stretch is what everything else used (Linux /proc).
"""

from __future__ import annotations

import os
from typing import Dict


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
