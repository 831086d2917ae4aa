"""Peak memory of a host agent with N instances, in its own process.

The parent seeds N instances on one fake host; a child process then starts
that host's agent afresh (a new tracker, as after a restart) and runs three
periodic passes: the first full one, a quiet one, and one after a boot.
The child reports Python's traced allocation peak over those passes
(tracemalloc) and the process's maximum resident set size (ru_maxrss),
which includes the interpreter and every imported library.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import subprocess
import sys
import time
import tracemalloc

from benchmarks import environment as env
from benchmarks import host as hosts
from benchmarks.results import Figure, Report, Verdict
from tests.fixtures.placement_server import PlacementServer

BENCH = "memory"
HOST = "bench-memory-host"
CHILD_TIMEOUT = 600
TARGET_FIRST_PASS_MS = 500.0
TARGET_ENGINE = "postgresql"


def sizes(quick: bool) -> int:
    return 5 if quick else 1000


def run(engine_name: str, work_dir: str, quick: bool,
        server: PlacementServer | None) -> Report:
    """(``server`` is unused: no Placement comparison here.)"""
    count = sizes(quick)
    report = Report()
    report.notes.append(
        f"memory: a fresh agent process for a host with {count} instances runs a full, a "
        "quiet and a one-changed periodic pass; tracemalloc peak of those passes and "
        "ru_maxrss of the process (interpreter and libraries included).")
    with contextlib.ExitStack() as stack:
        compute_url = stack.enter_context(env.database(engine_name, os.path.join(work_dir, "mc")))
        placement_url = stack.enter_context(
            env.database(engine_name, os.path.join(work_dir, "mp")))
        conf = hosts.host_conf(work_dir, compute_url, placement_url, count + 10)
        agent = hosts.agent(conf, HOST)
        try:
            agent.tracker.update_available_resource()
            hosts.seed_instances(agent, count)
        finally:
            agent.close()
        measured = _child(work_dir, compute_url, placement_url, count, trace=True)
        # The first pass is timed in a fresh process of its own: tracemalloc
        # slows every allocation it traces.
        first_ms = _child(work_dir, compute_url, placement_url, count,
                          trace=False)["full_pass_ms"]
    report.figures.extend([
        Figure(BENCH, engine_name, f"{count} instances tracemalloc peak",
               measured["tracemalloc_peak"] / 2**20, "MiB", "during the three passes"),
        Figure(BENCH, engine_name, f"{count} instances ru_maxrss",
               measured["maxrss_kib"] / 1024, "MiB", "whole agent process"),
        Figure(BENCH, engine_name, f"{count} instances ru_maxrss before passes",
               measured["baseline_kib"] / 1024, "MiB", "after imports and start-up"),
        Figure(BENCH, engine_name, f"{count} instances full pass", first_ms,
               "ms", "first pass of a fresh agent, without tracemalloc"),
    ])
    if engine_name == TARGET_ENGINE and not quick:
        report.verdicts.append(Verdict(
            BENCH, engine_name, f"{count} instances: first pass of a fresh agent <= "
            f"{TARGET_FIRST_PASS_MS:g} ms", f"{first_ms:.0f} ms",
            first_ms <= TARGET_FIRST_PASS_MS))
    return report


def _child(work_dir: str, compute_url: str, placement_url: str, count: int,
           trace: bool) -> dict:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks.memory", work_dir, compute_url, placement_url,
         str(count), "trace" if trace else "time"],
        cwd=root, capture_output=True, text=True, timeout=CHILD_TIMEOUT, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"memory child exited {result.returncode}: {result.stderr[-2000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def child(work_dir: str, compute_url: str, placement_url: str, count: int,
          trace: bool) -> dict:
    env.quiet_logs()
    conf = hosts.host_conf(work_dir, compute_url, placement_url, count + 10)
    agent = hosts.agent(conf, HOST)
    baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    try:
        if trace:
            tracemalloc.start()
        began = time.perf_counter()
        agent.tracker.update_available_resource()
        full_ms = (time.perf_counter() - began) * 1000
        if not trace:
            return {"full_pass_ms": full_ms}
        agent.tracker.update_available_resource()
        hosts.boot(agent.tracker, 1, prefix="memory-changed")
        agent.tracker.update_available_resource()
        _current, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    finally:
        agent.close()
    return {"tracemalloc_peak": peak, "baseline_kib": baseline, "full_pass_ms": full_ms,
            "maxrss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}


if __name__ == "__main__":
    print(json.dumps(child(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]),
                           sys.argv[5] == "trace")))
