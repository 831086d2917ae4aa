"""Periodic: one update_available_resource pass of a host, at N instances.

"Nothing changed": a pass after a pass, nobody wrote in between. "One
instance changed": one instance was booted on the host since the last pass
(its claim moved the root provider's generation, so the tracker re-reads
the allocations on its providers before it heals). Counted are the calls
to the placement backend, and apart from them the statements that write
to the compute records (a pass records the host's heartbeat there).
"""

from __future__ import annotations

import contextlib
import os
import time

import sqlalchemy as sa

from benchmarks import environment as env
from benchmarks import host as hosts
from benchmarks.results import Figure, Report, Verdict, median
from tests.fixtures.placement_server import PlacementServer

BENCH = "periodic"
REPEATS = 5
QUICK_REPEATS = 2
TARGET_QUIET_MS = 50.0
TARGET_SIZE = 1000
TARGET_ENGINE = "postgresql"


class RecordWrites:
    """Counts INSERT/UPDATE/DELETE statements sent through one engine."""

    def __init__(self, engine: sa.Engine) -> None:
        self.count = 0
        sa.event.listen(engine, "before_cursor_execute", self._seen)

    def _seen(self, _conn, _cursor, statement: str, *_args) -> None:
        if statement.lstrip()[:6].upper() in ("INSERT", "UPDATE", "DELETE"):
            self.count += 1


def sizes(quick: bool) -> tuple[int, ...]:
    return (3, 6) if quick else (10, 100, 1000)


def _pass(agent: hosts.Agent, records: RecordWrites) -> tuple[float, int, int, int]:
    tracker = agent.tracker
    tracker.stats.reset()
    records.count = 0
    began = time.perf_counter()
    tracker.update_available_resource()
    return ((time.perf_counter() - began) * 1000, tracker.stats.reads, tracker.stats.writes,
            records.count)


def run(engine_name: str, work_dir: str, quick: bool,
        server: PlacementServer | None) -> Report:
    """(``server`` is unused: no Placement comparison here.)"""
    report = Report()
    report.notes.append(
        "periodic: wall time of one update_available_resource pass (median of "
        f"{QUICK_REPEATS if quick else REPEATS}) and its placement backend reads/writes; "
        "'one changed' = one instance booted on the host since the previous pass.")
    with contextlib.ExitStack() as stack:
        compute_url = stack.enter_context(env.database(engine_name, os.path.join(work_dir, "pc")))
        placement_url = stack.enter_context(
            env.database(engine_name, os.path.join(work_dir, "pp")))
        for size in sizes(quick):
            conf = hosts.host_conf(work_dir, compute_url, placement_url, size + REPEATS + 10)
            agent = hosts.agent(conf, f"bench-host-{size}")
            try:
                agent.tracker.update_available_resource()
                began = time.perf_counter()
                hosts.seed_instances(agent, size)
                report.figures.append(Figure(BENCH, engine_name, f"{size} seed (setup)",
                                             time.perf_counter() - began, "s",
                                             "instance record + claim, one by one"))
                _measure(report, engine_name, size, agent, QUICK_REPEATS if quick else REPEATS)
            finally:
                agent.close()
    return report


def _measure(report: Report, engine: str, size: int, agent: hosts.Agent, repeats: int) -> None:
    records = RecordWrites(agent.store.engine)
    _pass(agent, records)  # settle after the boots
    quiet = [_pass(agent, records) for _ in range(repeats)]
    changed = []
    for i in range(repeats):
        hosts.boot(agent.tracker, 1, prefix=f"changed-{i}")
        changed.append(_pass(agent, records))
    for case, runs in (("nothing changed", quiet), ("one changed", changed)):
        times = [r[0] for r in runs]
        ms = median(times)
        reads, writes = max(r[1] for r in runs), max(r[2] for r in runs)
        report.figures.append(Figure(BENCH, engine, f"{size} {case} time", ms, "ms", "",
                                     min(times), max(times)))
        report.figures.append(Figure(BENCH, engine, f"{size} {case} record writes",
                                     max(r[3] for r in runs), "statements",
                                     "compute-record writes (heartbeat), not placement"))
        if case == "nothing changed" and size == TARGET_SIZE and engine == TARGET_ENGINE:
            report.verdicts.append(Verdict(
                BENCH, engine, f"{size} instances, nothing changed: <= {TARGET_QUIET_MS:g} ms",
                f"{ms:.0f} ms", ms <= TARGET_QUIET_MS))
        report.figures.append(Figure(BENCH, engine, f"{size} {case} reads", reads, "calls"))
        report.figures.append(Figure(BENCH, engine, f"{size} {case} writes", writes, "calls"))
        if case == "nothing changed":
            report.verdicts.append(Verdict(
                BENCH, engine, f"{size} instances, nothing changed: 0 writes, 1 read",
                f"{writes} writes, {reads} reads", writes == 0 and reads == 1))
