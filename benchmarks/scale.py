"""Scale: limited candidate searches, and allocation writes, in a cloud of
100,000 providers.

The cloud of ``candidates`` (same rows, bulk-seeded, then ANALYZE), ten
times larger. The sql backend gets a database of its own; Placement's
database is the one the run shares, topped up to the same providers (the
earlier benchmarks may have left a few dozen providers of their own in
it). Placement is measured only while its share of the run stays within
PLACEMENT_BUDGET_S (seeding included); past that it is reported as not
finished.

Allocation writes (the claim and the move of ``claims``, on a pair of
providers of their own) are timed one cycle at a time on the sql side
twice: in a database of their own holding just that pair, and in the
seeded cloud after its searches (so the searches find the cloud Placement
has). A write names the providers it touches, so its cost should not grow
with the providers it does not.
"""

from __future__ import annotations

import contextlib
import os
import time

import sqlalchemy as sa

from benchmarks import candidates, claims, seed
from benchmarks import environment as env
from benchmarks.results import Figure, Report, Verdict, percentile
from rtframework import db
from rtframework.placement import types as t
from tests.fixtures.placement_server import PlacementServer

BENCH = "scale"
TARGET_P50_MS = {10: 25.0, 1000: 100.0}
TARGET_ENGINE = "postgresql"
PLACEMENT_BUDGET_S = 600.0
# An allocation write's p50 in the seeded cloud over its p50 in the empty one.
TARGET_WRITE_GROWTH = 1.5


def sizes(quick: bool) -> dict:
    if quick:
        return {"providers": 200, "samples": 3, "placement_samples": 1, "write_cycles": 20}
    return {"providers": 100_000, "samples": 15, "placement_samples": 3,
            "write_cycles": 300}


def _write_ms(backend, pair: tuple[str, str], cycles: int) -> list[float]:
    """Milliseconds per allocation write of ``cycles`` claim + move cycles."""
    ms = []
    for _ in range(cycles):
        began = time.perf_counter()
        claims.cycle(backend, *pair)
        ms.append((time.perf_counter() - began) * 1000 / claims.WRITES_PER_CYCLE)
    return ms


def _new_pair_writes(backend, cycles: int) -> list[float]:
    """:func:`_write_ms` on a new pair of providers, after a few cycles that
    open connections and prepare statements."""
    pair = claims.seed_pairs(backend, 1, "scale")[0]
    _write_ms(backend, pair, 5)
    return _write_ms(backend, pair, cycles)


def _timed_writes(work_dir: str, engine: str, cycles: int) -> list[float]:
    """:func:`_new_pair_writes` with the pair alone in a new database."""
    with env.database(engine, os.path.join(work_dir, "scale-writes-db")) as url:
        backend = env.sql_backend(work_dir, url)
        try:
            return _new_pair_writes(backend, cycles)
        finally:
            backend.close()


def _writes(report: Report, engine: str, label: str, ms: list[float]) -> Figure:
    figure = Figure(BENCH, engine, f"allocation write, {label}, sql p50", percentile(ms, 50),
                    "ms", f"{len(ms)} claim + move cycles", min(ms), max(ms))
    report.figures.append(figure)
    return figure


def _seeded_in_placement(url: str) -> int:
    """How many of the benchmark cloud's providers Placement holds already
    (``candidates`` seeds them in index order)."""
    engine = db.create_engine(url)
    try:
        with db.read(engine) as conn:
            return conn.execute(sa.text(
                "SELECT count(*) FROM resource_providers WHERE name LIKE 'bench-cn-%'")).scalar()
    finally:
        engine.dispose()


def run(engine_name: str, work_dir: str, quick: bool,
        server: PlacementServer | None) -> Report:
    plan = sizes(quick)
    size = plan["providers"]
    report = Report()
    report.notes.append(
        f"scale: the candidates cloud at {size} providers, limits 10 and 1000; sql p50 of "
        f"{plan['samples']} searches; Placement {plan['placement_samples']} per limit "
        f"within {PLACEMENT_BUDGET_S:g}s (its seeding included) or not finished.")
    with contextlib.ExitStack() as stack:
        url = stack.enter_context(env.database(engine_name, os.path.join(work_dir, "scale-db")))
        backend = env.sql_backend(work_dir, url)
        stack.callback(backend.close)
        empty = _writes(report, engine_name, "2 providers",
                        _timed_writes(work_dir, engine_name, plan["write_cycles"]))
        began = time.perf_counter()
        seed.seed_sql(url, 0, size)
        seed.analyze(url)
        report.figures.append(Figure(BENCH, engine_name, f"seed {size} sql (bulk)",
                                     time.perf_counter() - began, "s"))
        for limit in (10, 1000):
            query = t.CandidateQuery(resources=candidates.REQUEST, limit=limit)
            backend.get_allocation_candidates(query)
            ms = []
            for _ in range(plan["samples"]):
                began = time.perf_counter()
                found = backend.get_allocation_candidates(query)
                ms.append((time.perf_counter() - began) * 1000)
            p50 = percentile(ms, 50)
            report.figures.append(Figure(
                BENCH, engine_name, f"{size} limit={limit} sql p50", p50, "ms",
                f"{len(found.allocation_requests)} candidates", min(ms), max(ms)))
            if engine_name == TARGET_ENGINE:
                report.verdicts.append(Verdict(
                    BENCH, engine_name, f"{size} providers limit={limit}: sql p50 <= "
                    f"{TARGET_P50_MS[limit]:g} ms", f"{p50:.1f} ms",
                    p50 <= TARGET_P50_MS[limit]))
        seeded = _writes(report, engine_name, f"{size + 2} providers",
                         _new_pair_writes(backend, plan["write_cycles"]))
        growth = seeded.value / empty.value
        report.figures.append(Figure(BENCH, engine_name, "allocation write growth", growth, "x",
                                     f"p50 at {size + 2} providers over p50 at 2"))
        report.verdicts.append(Verdict(
            BENCH, engine_name, f"allocation write at {size + 2} providers: sql p50 <= "
            f"{TARGET_WRITE_GROWTH:g}x the one at 2", f"{growth:.2f}x",
            growth <= TARGET_WRITE_GROWTH))
        if server is not None:
            _placement(report, engine_name, work_dir, server, plan)
    return report


def _placement(report: Report, engine: str, work_dir: str, server: PlacementServer,
               plan: dict) -> None:
    size = plan["providers"]
    deadline = time.perf_counter() + PLACEMENT_BUDGET_S
    began = time.perf_counter()
    seed.seed_placement(server.database_url, _seeded_in_placement(server.database_url), size)
    seed.analyze(server.database_url)
    report.figures.append(Figure(BENCH, engine, f"seed {size} placement (bulk)",
                                 time.perf_counter() - began, "s"))
    backend = env.http_backend(work_dir, server.url)
    try:
        for limit in (10, 1000):
            query = t.CandidateQuery(resources=candidates.REQUEST, limit=limit)
            ms = []
            while len(ms) < plan["placement_samples"] and time.perf_counter() < deadline:
                began = time.perf_counter()
                found = backend.get_allocation_candidates(query)
                ms.append((time.perf_counter() - began) * 1000)
            if not ms:
                report.notes.append(f"scale on {engine}: Placement limit={limit} NOT FINISHED "
                                    f"within {PLACEMENT_BUDGET_S:g}s (seeding included)")
                continue
            report.figures.append(Figure(
                BENCH, engine, f"{size} limit={limit} placement p50", percentile(ms, 50), "ms",
                f"{len(found.allocation_requests)} candidates, {len(ms)} samples", min(ms),
                max(ms)))
            sql = report.find(BENCH, engine, f"{size} limit={limit} sql p50")
            if sql is not None and sql.value:
                report.figures.append(Figure(BENCH, engine, f"{size} limit={limit} "
                                             "placement/sql p50",
                                             percentile(ms, 50) / sql.value, "x"))
    finally:
        backend.close()
