"""Allocation candidates: p50/p95 latency of a VCPU+MEMORY_MB+DISK_GB request.

The same cloud (half of the providers partly used, one in ten with the
trait HW_CPU_X86_AVX2) is bulk-seeded into the sql backend and into real
OpenStack Placement on the same engine. Each request runs through both
backends in turn (sql, Placement, sql, ...), with limits 10, 1000 and none,
without and with the trait required, so their latencies are taken side by
side. Latency includes turning the answer into the contract's value types
(for Placement: the HTTP round trip and JSON decoding too).

Then the same request on the trees cloud (cases ``trees limit=...``), of
about as many providers: each compute node a root with two NUMA children
that hold its VCPU and MEMORY_MB, and DISK_GB from a shared storage
provider (MISC_SHARES_VIA_AGGREGATE) per 100 compute nodes, in one
aggregate with their roots; every other node has an instance (on its
first NUMA child and its storage). Limits 10 and 1000, and unlimited at
the smallest size only.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from typing import NamedTuple

from benchmarks import environment as env
from benchmarks import replay, seed
from benchmarks.results import Figure, Report, Verdict, percentile
from rtframework.placement import types as t
from rtframework.placement.backend import PlacementBackend
from tests.fixtures.placement_server import PlacementServer

BENCH = "candidates"
REQUEST = {"VCPU": 2, "MEMORY_MB": 4096, "DISK_GB": 40}
TARGET_P50_MS = 25.0
# Speed-up over Placement per limit: 1000 is Nova's default
# max_placement_results; an unlimited search costs what it returns.
TARGET_SPEEDUP = {10: 3.0, 1000: 20.0, None: 3.0}
API_SAMPLE = 50
# The worst case of a limited search: this share of the cloud, the trees
# with the lowest ids, full.
WORST_FULL = 0.7
WORST_LIMITS = (10, 1000)
# A case is skipped at the next size when even linear growth from the size
# before would make one call of a backend take longer than this.
CALL_BUDGET_S = 30.0


def sizes(quick: bool) -> dict:
    if quick:
        return {"providers": (20, 60), "samples": 3, "unlimited_samples": 2}
    return {"providers": (1000, 10000), "samples": 25, "unlimited_samples": 7}


def cases() -> list[tuple[str, t.CandidateQuery]]:
    found = []
    for trait in (False, True):
        for limit in (10, 1000, None):
            name = f"limit={limit or 'none'}" + (f" required={seed.TRAIT}" if trait else "")
            found.append((name, t.CandidateQuery(
                resources=REQUEST, limit=limit,
                required_traits=frozenset({seed.TRAIT}) if trait else frozenset())))
    return found


def trees_cases(unlimited: bool) -> list[tuple[str, t.CandidateQuery]]:
    """The request on the trees cloud, unlimited only when asked."""
    return [(f"trees limit={limit or 'none'}", t.CandidateQuery(resources=REQUEST, limit=limit))
            for limit in (10, 1000, None) if limit or unlimited]


def _timed(call: Callable[[t.CandidateQuery], t.AllocationCandidates],
           query: t.CandidateQuery) -> tuple[float, float, int]:
    """Wall ms, this process's CPU ms (every thread's) and the candidates."""
    began, cpu = time.perf_counter(), time.process_time()
    found = call(query)
    return ((time.perf_counter() - began) * 1000, (time.process_time() - cpu) * 1000,
            len(found.allocation_requests))


def _seeder(bulk: Callable[[str, int, int], None], url: str) -> Callable[[int, int], None]:
    def seed_range(start: int, stop: int) -> None:
        bulk(url, start, stop)
        seed.analyze(url)

    return seed_range


def run(engine_name: str, work_dir: str, quick: bool,
        server: PlacementServer | None) -> Report:
    plan = sizes(quick)
    report = Report()
    report.notes.append(
        "candidates: both databases bulk-seeded with the same rows (then ANALYZE on "
        "PostgreSQL/MySQL); seeding times are printed apart from the latencies.")
    report.notes.append(
        f"candidates: request {t.CandidateQuery(resources=REQUEST).resources}; providers "
        f"with {dict((rc, i.total) for rc, i in seed.INVENTORY.items())}, every other one "
        f"using {seed.USAGE}, one in ten with {seed.TRAIT}. Requests alternate between the "
        f"backends; {plan['samples']} samples per case ({plan['unlimited_samples']} unlimited).")
    report.notes.append(
        f"candidates: trees cases on a second cloud, in databases of its own (a second "
        f"Placement): per compute node a root and two NUMA children with "
        f"{dict((rc, i.total) for rc, i in seed.NUMA_INVENTORY.items())} each, DISK_GB "
        f"{seed.STORAGE_INVENTORY['DISK_GB'].total} on one sharing provider per "
        f"{seed.TREES_GROUP} nodes (aggregate with their roots); every other node using "
        f"{seed.USAGE}. Unlimited at the smallest size only.")
    with contextlib.ExitStack() as stack:
        url, backends, seeders = _sides(stack, engine_name, work_dir, "cand-db", seed.seed_sql,
                                        seed.seed_placement, server)
        starts = (0, *plan["providers"][:-1])
        _grow(report, engine_name, backends, seeders, plan, [
            _Step(size, start, size, "", "providers", cases())
            for start, size in zip(starts, plan["providers"], strict=True)])
        _verdicts(report, engine_name, max(plan["providers"]), server is not None, cases())
        if not quick:
            _api_seeding_rate(report, engine_name, backends, max(plan["providers"]))
        _worst_case(report, engine_name, max(plan["providers"]), backends["sql"], url,
                    plan["samples"])
    _trees(report, engine_name, work_dir, plan, server)
    return report


def _trees(report: Report, engine: str, work_dir: str, plan: dict,
           server: PlacementServer | None) -> None:
    """The trees cloud, after everything on the flat one, in databases of
    its own on both sides, Placement's served by a second Placement like
    the run's. Sharing the run's Placement is not clean either way: the
    flat providers answer the trees request as well as the trees providers
    answer the flat one (same standard classes), so the two clouds would be
    measured together; and the sql backend takes its sharing-provider path
    for every request once any provider has MISC_SHARES_VIA_AGGREGATE."""
    with contextlib.ExitStack() as stack:
        own = None
        if server is not None:
            began = time.perf_counter()
            own = stack.enter_context(env.placement(
                os.path.join(work_dir, "trees-placement"), engine, server.serving))
            report.figures.append(Figure(BENCH, engine, "trees Placement start (setup)",
                                         time.perf_counter() - began, "s", "db sync included"))
        _url, backends, seeders = _sides(stack, engine, work_dir, "trees-db",
                                         seed.seed_trees_sql, seed.seed_trees_placement, own)
        nodes = [seed.trees_nodes(target) for target in plan["providers"]]
        steps = [_Step(seed.trees_providers(stop), start, stop, "trees ", "compute nodes",
                       trees_cases(start == 0))
                 for start, stop in zip((0, *nodes[:-1]), nodes, strict=True)]
        _grow(report, engine, backends, seeders, plan, steps)
        _verdicts(report, engine, steps[-1].size, server is not None, trees_cases(False))


def _sides(stack: contextlib.ExitStack, engine: str, work_dir: str, name: str,
           seed_sql: Callable[[str, int, int], None],
           seed_placement: Callable[[str, int, int], None],
           server: PlacementServer | None,
           ) -> tuple[str, dict[str, PlacementBackend], dict[str, Callable[[int, int], None]]]:
    """A new sql database (its URL), and the backends of both sides with
    their seeders (Placement's only with ``server``), closed by ``stack``."""
    url = stack.enter_context(env.database(engine, os.path.join(work_dir, name)))
    backends: dict[str, PlacementBackend] = {"sql": env.sql_backend(work_dir, url)}
    stack.callback(backends["sql"].close)
    seeders = {"sql": _seeder(seed_sql, url)}
    if server is not None:
        backends["placement"] = env.http_backend(work_dir, server.url)
        stack.callback(backends["placement"].close)
        seeders["placement"] = _seeder(seed_placement, server.database_url)
    return url, backends, seeders


class _Step(NamedTuple):
    """One size of a growing cloud: seed ``start``..``stop``-1 (of
    ``unit``), then measure ``cases`` at ``size`` providers."""

    size: int
    start: int
    stop: int
    label: str
    unit: str
    cases: list[tuple[str, t.CandidateQuery]]


def _grow(report: Report, engine: str, backends: dict[str, PlacementBackend],
          seeders: dict[str, Callable[[int, int], None]], plan: dict,
          steps: list[_Step]) -> None:
    """Seed each step on every side (timed apart), then measure its cases."""
    previous = None
    for step in steps:
        for name, seeder in seeders.items():
            began = time.perf_counter()
            seeder(step.start, step.stop)
            report.figures.append(Figure(
                BENCH, engine, f"seed {step.size} {step.label}{name} (bulk)",
                time.perf_counter() - began, "s", f"{step.unit} {step.start}..{step.stop - 1}"))
        _measure(report, engine, step.size, previous, backends, plan, step.cases)
        previous = step.size


def fill_worst(url: str, size: int) -> int:
    """Make the trees of the lowest-id WORST_FULL of ``size`` providers
    full, then refresh the statistics; how many were made full."""
    full = int(size * WORST_FULL)
    seed.fill_sql(url, full)
    seed.analyze(url)
    return full


def _worst_case(report: Report, engine: str, size: int, backend: PlacementBackend, url: str,
                samples: int) -> None:
    """Limited searches when the lowest-id trees (WORST_FULL of the cloud)
    are full, so a search must pass them all before it finds a match
    (the sql side only: Placement builds every candidate before cutting
    whatever the order)."""
    began = time.perf_counter()
    full = fill_worst(url, size)
    report.figures.append(Figure(BENCH, engine, f"{size} worst case fill (setup)",
                                 time.perf_counter() - began, "s",
                                 f"providers 0..{full - 1} made full"))
    for limit in WORST_LIMITS:
        query = t.CandidateQuery(resources=REQUEST, limit=limit)
        with replay.recording(backend.engine) as statements:
            backend.get_allocation_candidates(query)
        runs, alone = [], []
        for _ in range(samples):
            runs.append(_timed(backend.get_allocation_candidates, query))
            alone.append(replay.replay(backend.engine, statements))
        ms = [r[0] for r in runs]
        p50 = percentile(ms, 50)
        report.figures.append(Figure(
            BENCH, engine, f"{size} worst case limit={limit} sql p50", p50, "ms",
            f"{full} lowest-id trees full; {runs[-1][2]} candidates", min(ms), max(ms)))
        report.figures.append(Figure(
            BENCH, engine, f"{size} worst case limit={limit} sql cpu p50",
            percentile([r[1] for r in runs], 50), "ms", "this process's CPU time per call"))
        _statements_alone(report, engine, f"{size} worst case limit={limit}", alone)
        if limit == 10:
            report.verdicts.append(Verdict(
                BENCH, engine, f"{size} providers, {full} lowest-id trees full, limit=10: "
                f"sql p50 <= {TARGET_P50_MS:g} ms", f"{p50:.1f} ms", p50 <= TARGET_P50_MS))


def _statements_alone(report: Report, engine: str, case: str,
                      replays: list[replay.Replayed]) -> None:
    """The p50 of replaying one sql search's statements, each replay
    taken right after a timed search."""
    last = replays[-1]
    report.figures.append(Figure(
        BENCH, engine, f"{case} sql statements alone p50",
        percentile([r.ms for r in replays], 50), "ms",
        f"the search's {last.statements} statements replayed on a DBAPI connection, "
        f"{last.rows} rows fetched (benchmarks/replay.py)"))


def _projected_s(report: Report, engine: str, case: str, name: str, size: int,
                 previous: int | None) -> float:
    """One call's duration at ``size`` if it grew linearly from ``previous``."""
    before = previous and report.find(BENCH, engine, f"{previous} {case} {name} p50")
    return before.value / 1000 * size / previous if before else 0.0


def _measure(report: Report, engine: str, size: int, previous: int | None, all_backends,
             plan, measured: list[tuple[str, t.CandidateQuery]]) -> None:
    for case, query in measured:
        count = plan["samples"] if query.limit else plan["unlimited_samples"]
        backends = {}
        for name, backend in all_backends.items():
            projected = _projected_s(report, engine, case, name, size, previous)
            if projected > CALL_BUDGET_S:
                report.figures.append(Figure(
                    BENCH, engine, f"{size} {case} {name} p50", projected * 1000, "ms",
                    f"SKIPPED: linear projection from {previous} providers exceeds the "
                    f"{CALL_BUDGET_S:g}s per-call budget (a lower bound, not measured)"))
                continue
            backends[name] = backend
        latencies: dict[str, list[float]] = {name: [] for name in backends}
        cpu: list[float] = []
        found: dict[str, int] = {}
        statements: list[replay.Statement] = []
        for name, backend in backends.items():  # warm caches and connections
            if name == "sql":
                with replay.recording(backend.engine) as statements:
                    backend.get_allocation_candidates(query)
            else:
                backend.get_allocation_candidates(query)
        alone: list[replay.Replayed] = []
        for _ in range(count):
            for name, backend in backends.items():
                ms, used, found[name] = _timed(backend.get_allocation_candidates, query)
                latencies[name].append(ms)
                if name == "sql":
                    cpu.append(used)
                    alone.append(replay.replay(backend.engine, statements))
        for name, samples in latencies.items():
            for q in (50, 95):
                report.figures.append(Figure(
                    BENCH, engine, f"{size} {case} {name} p{q}", percentile(samples, q), "ms",
                    f"{found[name]} candidates"))
        if cpu:
            # The sql side's split: the rest of its wall time waits on the
            # database server (SQLite runs in this process: all CPU here).
            report.figures.append(Figure(
                BENCH, engine, f"{size} {case} sql cpu p50", percentile(cpu, 50), "ms",
                "this process's CPU time per call"))
        if alone:
            _statements_alone(report, engine, f"{size} {case}", alone)
        if "placement" in latencies and "sql" in latencies:
            speedup = percentile(latencies["placement"], 50) / percentile(latencies["sql"], 50)
            detail = "" if found["sql"] == found["placement"] else \
                f"candidate counts differ: sql {found['sql']}, placement {found['placement']}"
            report.figures.append(Figure(BENCH, engine, f"{size} {case} placement/sql p50",
                                         speedup, "x", detail))


def _verdicts(report: Report, engine: str, size: int, with_placement: bool,
              measured: list[tuple[str, t.CandidateQuery]]) -> None:
    for case, query in measured:
        p50 = report.find(BENCH, engine, f"{size} {case} sql p50")
        skipped = "SKIPPED" in p50.detail
        if query.limit is not None:
            report.verdicts.append(Verdict(
                BENCH, engine, f"{size} providers {case}: sql p50 <= {TARGET_P50_MS:g} ms",
                f"{'>= ' if skipped else ''}{p50.value:.1f} ms", p50.value <= TARGET_P50_MS))
        speedup = report.find(BENCH, engine, f"{size} {case} placement/sql p50")
        if with_placement and speedup is not None:
            target = TARGET_SPEEDUP[query.limit]
            report.verdicts.append(Verdict(
                BENCH, engine, f"{size} providers {case}: sql >= {target:g}x faster "
                "than Placement", f"{speedup.value:.1f}x", speedup.value >= target))


def _api_seeding_rate(report: Report, engine: str, backends, largest: int) -> None:
    """Providers per second when seeded through each backend's API, one at
    a time (create, inventory, traits, a claim on every other one)."""
    for name, backend in backends.items():
        began = time.perf_counter()
        for i in range(API_SAMPLE):
            p = seed.provider(10_000_000 + i)
            created = backend.create_provider(f"api-{name}-{i}", uuid=p.uuid)
            gen = backend.set_inventories(p.uuid, created.generation, seed.INVENTORY)
            if p.has_trait:
                backend.set_provider_traits(p.uuid, gen, frozenset({seed.TRAIT}))
            if p.consumer:
                backend.put_allocations(p.consumer, {p.uuid: seed.USAGE},
                                        project_id=seed.PROJECT, user_id=seed.USER,
                                        consumer_generation=None)
        rate = API_SAMPLE / (time.perf_counter() - began)
        report.figures.append(Figure(
            BENCH, engine, f"seed via API {name}", rate, "providers/s",
            f"{API_SAMPLE} providers; {largest} would take ~{largest / rate:.0f}s"))
