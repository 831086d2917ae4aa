"""Claims: allocate + move cycles per second with K concurrent clients.

A cycle is the two allocation writes of a move's life, for a new instance:

1. claim: the instance's flavor on its source provider, written with
   consumer generation None (a new consumer);
2. move: one atomic multi-consumer write that hands the source claim to a
   migration consumer (generation None) and moves the instance to the
   destination provider (generation 1) -- the write a move, its confirm or
   its revert is made of.

Each client has its own source/destination pair (two hosts), so clients
compete for the database, not for one provider's generation. The same
cycle runs through ``sql`` and through real OpenStack Placement (HTTP) on
the same engine, and the engine's raw rate of one-row INSERT+COMMIT
transactions with the same number of clients is the ceiling. Rounds of
the three systems are interleaved, and every round starts with no
allocations, so a ratio compares figures taken under the same conditions.
"""

from __future__ import annotations

import contextlib
import os
import uuid as uuidlib
from collections.abc import Callable

import sqlalchemy as sa

from benchmarks import environment as env
from benchmarks.load import Throughput, run_clients
from benchmarks.results import Figure, Report, Verdict, median
from rtframework import db
from rtframework.placement import types as t
from rtframework.placement.backend import PlacementBackend
from tests.fixtures.placement_server import PlacementServer

BENCH = "claims"
FLAVOR = {"VCPU": 1, "MEMORY_MB": 256, "DISK_GB": 1}
_ROOMY = {rc: t.Inventory(total=10_000_000, max_unit=10_000_000) for rc in FLAVOR}
PROJECT, USER = "bench-project", "bench-user"
WRITES_PER_CYCLE = 2
TARGET_VS_PLACEMENT = 5.0
TARGET_VS_RAW = 0.30
TARGET_ENGINE = "postgresql"

_raw_metadata = sa.MetaData()
RAW_TABLE = sa.Table(
    "bench_raw_commits", _raw_metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("client", sa.Integer, nullable=False),
    sa.Column("payload", sa.String(36), nullable=False),
)


def sizes(quick: bool) -> dict:
    if quick:
        return {"clients": (1, 2), "seconds": 0.2, "rounds": 1}
    return {"clients": (1, 2, 8), "seconds": 2.0, "rounds": 3}


def seed_pairs(backend: PlacementBackend, count: int, tag: str) -> list[tuple[str, str]]:
    """``count`` (source, destination) provider pairs with room for any run."""
    pairs = []
    for k in range(count):
        pair = []
        for side in ("src", "dst"):
            provider = backend.create_provider(f"bench-{tag}-{side}-{k}")
            backend.set_inventories(provider.uuid, provider.generation, _ROOMY)
            pair.append(provider.uuid)
        pairs.append((pair[0], pair[1]))
    return pairs


def cycle(backend: PlacementBackend, source: str, dest: str) -> None:
    """One claim + move cycle of a new instance (see the module docstring)."""
    instance, migration = str(uuidlib.uuid4()), str(uuidlib.uuid4())
    backend.put_allocations(instance, {source: FLAVOR}, project_id=PROJECT, user_id=USER,
                            consumer_generation=None)
    backend.write_allocations([
        t.AllocationWrite(migration, {source: FLAVOR}, PROJECT, USER, None, "MIGRATION"),
        t.AllocationWrite(instance, {dest: FLAVOR}, PROJECT, USER, 1),
    ])


def _raw_commit(engine: sa.Engine, client: int) -> Callable[[], None]:
    insert = RAW_TABLE.insert()

    def commit() -> None:
        with db.transaction(engine) as conn:
            conn.execute(insert, {"client": client, "payload": str(uuidlib.uuid4())})

    return commit


def _clear(engine: sa.Engine, tables: tuple[str, ...]) -> None:
    """Remove what earlier rounds wrote, so every round starts alike."""
    with db.transaction(engine) as conn:
        for table in tables:
            conn.execute(sa.text(f"DELETE FROM {table}"))


def _clear_providers(engine: sa.Engine, uuids: list[str]) -> None:
    """Remove the allocations on ``uuids`` (and the consumers left with
    none) from a Placement database other benchmarks share."""
    with db.transaction(engine) as conn:
        conn.execute(sa.text(
            "DELETE FROM allocations WHERE resource_provider_id IN "
            "(SELECT id FROM resource_providers WHERE uuid IN :uuids)"
        ).bindparams(sa.bindparam("uuids", expanding=True)), {"uuids": uuids})
        conn.execute(sa.text(
            "DELETE FROM consumers WHERE uuid NOT IN (SELECT consumer_id FROM allocations)"))


def run(engine_name: str, work_dir: str, quick: bool,
        server: PlacementServer | None) -> Report:
    plan = sizes(quick)
    most = max(plan["clients"])
    with contextlib.ExitStack() as stack:
        url = stack.enter_context(env.database(engine_name, os.path.join(work_dir, "claims-db")))
        sql = env.sql_backend(work_dir, url)
        stack.callback(sql.close)
        sql_engine = db.create_engine(url, pool_size=most + 2)
        stack.callback(sql_engine.dispose)
        _raw_metadata.create_all(sql_engine)
        sql_pairs = seed_pairs(sql, most, "sql")
        systems = {
            "sql": (lambda k: lambda: cycle(sql, *sql_pairs[k]),
                    lambda: _clear(sql_engine, ("allocations", "consumers"))),
            "raw": (lambda k: _raw_commit(sql_engine, k),
                    lambda: _clear(sql_engine, ("bench_raw_commits",))),
        }
        if server is not None:
            # One HTTP session per client thread, as separate agents have.
            clients = [env.http_backend(work_dir, server.url) for _ in range(most)]
            for client in clients:
                stack.callback(client.close)
            http_pairs = seed_pairs(clients[0], most, "http")
            p_engine = db.create_engine(server.database_url)
            stack.callback(p_engine.dispose)
            systems["placement"] = (
                lambda k: lambda: cycle(clients[k], *http_pairs[k]),
                lambda: _clear_providers(p_engine, [u for pair in http_pairs for u in pair]),
            )
        samples = _measure(systems, plan)
    report = Report()
    _summarise(report, engine_name, plan, samples)
    return report


def _measure(systems, plan) -> dict[tuple[str, int], list[Throughput]]:
    samples: dict[tuple[str, int], list[Throughput]] = {}
    for _round in range(plan["rounds"]):
        for k in plan["clients"]:
            for name, (make_op, clear) in systems.items():
                clear()
                result = run_clients([make_op(i) for i in range(k)], plan["seconds"])
                samples.setdefault((name, k), []).append(result)
    return samples


def _summarise(report: Report, engine: str, plan, samples) -> None:
    report.notes.append(
        "claims: a cycle = (1) claim a new instance's flavor on its source provider "
        "(consumer generation None), (2) one atomic two-consumer write moving the source "
        "claim to a migration consumer and the instance to the destination. Each client "
        "owns one source/destination pair. raw = one-row INSERT+COMMIT transactions. "
        "sql/raw compares allocation write transactions (2 per cycle) with raw commits. "
        f"Median of {plan['rounds']} interleaved rounds of {plan['seconds']}s.")
    for k in plan["clients"]:
        rates = {}
        for name in ("sql", "placement", "raw"):
            runs = samples.get((name, k))
            if not runs:
                continue
            rates[name] = median([r.per_second for r in runs])
            errors = sum(r.errors for r in runs)
            unit = "commits/s" if name == "raw" else "cycles/s"
            detail = f"{errors} errors: {next(r.first_error for r in runs if r.errors)}" \
                if errors else ""
            report.figures.append(Figure(BENCH, engine, f"K={k} {name}", rates[name], unit,
                                         detail))
        if "placement" in rates and rates["placement"]:
            ratio = rates["sql"] / rates["placement"]
            report.figures.append(Figure(BENCH, engine, f"K={k} sql/placement", ratio, "x"))
            if engine == TARGET_ENGINE:
                report.verdicts.append(Verdict(
                    BENCH, engine, f"K={k}: sql >= {TARGET_VS_PLACEMENT:g}x Placement",
                    f"{ratio:.2f}x", ratio >= TARGET_VS_PLACEMENT))
        if rates.get("raw"):
            ratio = rates["sql"] * WRITES_PER_CYCLE / rates["raw"]
            report.figures.append(Figure(BENCH, engine, f"K={k} sql/raw", ratio * 100, "%",
                                         "allocation writes/s over raw commits/s"))
            if engine == TARGET_ENGINE:
                report.verdicts.append(Verdict(
                    BENCH, engine, f"K={k}: sql >= {TARGET_VS_RAW:.0%} of raw commits",
                    f"{ratio:.0%}", ratio >= TARGET_VS_RAW))
