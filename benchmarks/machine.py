"""How fast this machine is while the run lasts, so runs on different
machines (or on one machine at busier times) can be told apart.

A fixed piece of Python work, the kind the sql backend's client does
(small dicts and tuples built and dropped), timed in rounds at the start
and at the end of a run: a run whose work unit took 1.5x as long as
another's ran on a slower or busier machine, and its latencies are not
comparable with the other's.
"""

from __future__ import annotations

import os
import platform
import time

from benchmarks.results import Figure

BENCH = "machine"
ROUNDS = 7


def _work_unit() -> int:
    """Rows and a resources dict as the candidate search builds them; the
    count returned keeps the loop from being anything but what it is."""
    kept = 0
    for i in range(200_000):
        row = (i, "uuid", None, i, "VCPU", 8, 0, 1, 8, 1, 16.0, i & 7, "")
        resources = {row[4]: (row[5] * row[10], row[11], row[7], row[8], row[9])}
        kept += len(resources)
    return kept


def work_unit(when: str) -> Figure:
    """The work unit's median over ``ROUNDS`` rounds (min and max kept)."""
    rounds = []
    for _ in range(ROUNDS):
        began = time.perf_counter()
        _work_unit()
        rounds.append((time.perf_counter() - began) * 1000)
    rounds.sort()
    return Figure(BENCH, "-", f"python work unit, {when}", rounds[len(rounds) // 2], "ms",
                  f"{ROUNDS} rounds; load average {os.getloadavg()[0]:.2f}",
                  rounds[0], rounds[-1])


def cpu_model() -> str:
    """The CPU's model name and its clock of the moment as /proc/cpuinfo
    gives them (Linux on x86), else what the platform module knows."""
    try:
        with open("/proc/cpuinfo") as f:
            fields = {key.strip(): value.strip()
                      for key, value in (line.split(":", 1) for line in f if ":" in line)}
    except OSError:
        fields = {}
    name, mhz = fields.get("model name", ""), fields.get("cpu MHz", "")
    if not name:
        return platform.processor() or platform.machine()
    return f"{name} at {mhz} MHz" if mhz else name
