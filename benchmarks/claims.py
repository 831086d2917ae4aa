"""Claims: allocate + move cycles per second with K concurrent clients.

A cycle is the two allocation writes of a move's life, for a new instance:

1. claim: the instance's flavor on its source provider, written with
   consumer generation None (a new consumer);
2. move: one atomic multi-consumer write that hands the source claim to a
   migration consumer (generation None) and moves the instance to the
   destination provider (generation 1) -- the write a move, its confirm or
   its revert is made of.

Each client has its own source/destination pair (two hosts), so clients
compete for the database, not for one provider's generation. The sides,
all on the same engine:

* ``sql``: the sql backend called in-process by K threads of one process;
* ``sql-procs``: the same K clients spread over as many OS processes as
  Placement has worker processes, so both sides have the same process
  parallelism;
* ``placement``: rtframework's ``http`` backend (K threads, one HTTP session
  each) against real OpenStack Placement served by gunicorn: every cycle
  pays HTTP, JSON and keystoneauth as a host talking to Placement does;
* ``raw``: one-row INSERT+COMMIT transactions with K clients, the engine's
  ceiling for a one-statement transaction;
* ``statement`` (PostgreSQL): claims of new instances by the one-statement
  allocation write alone, its prepared statement sent on K DBAPI
  connections with none of SQLAlchemy's execution, the pool, the retry
  layer or validation: what the server spends on a write, so
  statement/raw is the ceiling of sql/raw.

Rounds of the sides are interleaved, and every round starts with no
allocations, so a ratio compares figures taken under the same conditions.
The raw baseline gets extra rounds until they lie within 10% of each
other (or the round budget runs out, which the verdict says).
"""

from __future__ import annotations

import contextlib
import os
import uuid as uuidlib
from collections.abc import Callable

import sqlalchemy as sa

from benchmarks import environment as env
from benchmarks import processes
from benchmarks.load import Throughput, run_clients
from benchmarks.results import Figure, Report, Verdict, median, spread
from rtframework import db
from rtframework.placement import types as t
from rtframework.placement.backend import PlacementBackend
from rtframework.placement.sql import pg_write
from tests.fixtures.placement_server import PlacementServer

BENCH = "claims"
FLAVOR = {"VCPU": 1, "MEMORY_MB": 256, "DISK_GB": 1}
_ROOMY = {rc: t.Inventory(total=10_000_000, max_unit=10_000_000) for rc in FLAVOR}
PROJECT, USER = "bench-project", "bench-user"
WRITES_PER_CYCLE = 2
TARGET_VS_PLACEMENT = 10.0
TARGET_VS_RAW = 0.50
# sql's throughput at the most clients over one client. The clients, the
# database server and (for Placement) its workers share 2 cores here.
TARGET_SCALING = 2.0
TARGET_ENGINE = "postgresql"
RAW_SPREAD = 0.10
RAW_MAX_ROUNDS = 15

_raw_metadata = sa.MetaData()
RAW_TABLE = sa.Table(
    "bench_raw_commits", _raw_metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("client", sa.Integer, nullable=False),
    sa.Column("payload", sa.String(36), nullable=False),
)


def sizes(quick: bool) -> dict:
    if quick:
        return {"clients": (1, 2), "seconds": 0.2, "rounds": 1, "raw_rounds": 1}
    return {"clients": (1, 2, 8), "seconds": 2.0, "rounds": 5, "raw_rounds": RAW_MAX_ROUNDS}


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


def _statement_alone(stack: contextlib.ExitStack, url: str,
                     provider: str) -> Callable[[], None]:
    """A claim of a new instance's FLAVOR on ``provider`` through the
    one-statement write's prepared statement on a DBAPI connection of its
    own, with its sessions' settings (see the module docstring)."""
    engine = db.create_engine(url, pool_size=1, pg_settings=pg_write.SESSION_SETTINGS)
    stack.callback(engine.dispose)
    pooled = engine.raw_connection()
    stack.callback(pooled.close)
    conn = pooled.driver_connection
    conn.autocommit = True
    cursor = conn.cursor()
    prepare, execute = pg_write.statements(engine.dialect)
    cursor.execute(prepare)

    def claim() -> None:
        cursor.execute(execute, pg_write.parameters([t.AllocationWrite(
            str(uuidlib.uuid4()), {provider: FLAVOR}, PROJECT, USER, None)]))
        if not cursor.fetchone()[0]:
            raise RuntimeError("the statement declined a claim")

    return claim


def _clear(engine: sa.Engine, tables: tuple[str, ...]) -> None:
    """Remove what earlier rounds wrote, so every round starts alike:
    TRUNCATE where there is one, so that no dead rows are left for
    autovacuum to clean up while the next round runs."""
    verb = "DELETE FROM" if engine.dialect.name == "sqlite" else "TRUNCATE"
    with db.transaction(engine) as conn:
        for table in tables:
            conn.execute(sa.text(f"{verb} {table}"))
        if "allocations" in tables:  # the sql backend stores usage with the inventory
            conn.execute(sa.text("UPDATE inventories SET used = 0"))


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
    workers = env.placement_serving(engine_name).workers
    with contextlib.ExitStack() as stack:
        url = stack.enter_context(env.database(engine_name, os.path.join(work_dir, "claims-db")))
        sql = env.sql_backend(work_dir, url)
        stack.callback(sql.close)
        sql_engine = db.create_engine(url, pool_size=most + 2)
        stack.callback(sql_engine.dispose)
        _raw_metadata.create_all(sql_engine)
        sql_pairs = seed_pairs(sql, most, "sql")
        clear_sql = lambda: _clear(sql_engine, ("allocations", "consumers"))  # noqa: E731
        systems = {
            "sql": (lambda k: run_clients([lambda i=i: cycle(sql, *sql_pairs[i])
                                           for i in range(k)], plan["seconds"]), clear_sql),
            "raw": (lambda k: run_clients([_raw_commit(sql_engine, i) for i in range(k)],
                                          plan["seconds"]),
                    lambda: _clear(sql_engine, ("bench_raw_commits",))),
        }
        version = sql_engine.dialect.server_version_info or (0,)
        if engine_name == "postgresql" and version >= pg_write.SESSION_SETTINGS_SINCE:
            alone = [_statement_alone(stack, url, source) for source, _dest in sql_pairs]
            systems["statement"] = (lambda k: run_clients(alone[:k], plan["seconds"]),
                                    clear_sql)
        if workers > 1:
            pool = stack.enter_context(processes.Pool(workers, work_dir, url))
            systems["sql-procs"] = (
                lambda k: pool.run(sql_pairs[:k], plan["seconds"]), clear_sql)
        if server is not None:
            # One HTTP session per client thread, as separate agents have.
            clients = [env.http_backend(work_dir, server.url) for _ in range(most)]
            for client in clients:
                stack.callback(client.close)
            http_pairs = seed_pairs(clients[0], most, "http")
            p_engine = db.create_engine(server.database_url)
            stack.callback(p_engine.dispose)
            systems["placement"] = (
                lambda k: run_clients([lambda i=i: cycle(clients[i], *http_pairs[i])
                                       for i in range(k)], plan["seconds"]),
                lambda: _clear_providers(p_engine, [u for pair in http_pairs for u in pair]),
            )
        samples = _measure(systems, plan)
        durability = _durability(sql_engine)
    report = Report()
    _summarise(report, engine_name, plan, samples, durability, workers, server)
    return report


def _durability(engine: sa.Engine) -> str:
    """The engine's commit durability settings, recorded beside raw."""
    names = {
        "postgresql": ("fsync", "synchronous_commit", "wal_sync_method"),
        "mysql": ("innodb_flush_log_at_trx_commit", "sync_binlog"),
        "sqlite": ("synchronous", "journal_mode"),
    }[engine.dialect.name if engine.dialect.name != "mariadb" else "mysql"]
    found = []
    with engine.connect() as conn:
        for name in names:
            if engine.dialect.name == "postgresql":
                value = conn.exec_driver_sql(f"SHOW {name}").scalar()
            elif engine.dialect.name == "sqlite":
                value = conn.exec_driver_sql(f"PRAGMA {name}").scalar()
            else:
                value = conn.exec_driver_sql(f"SELECT @@{name}").scalar()
            found.append(f"{name}={value}")
    return ", ".join(found)


def _measure(systems, plan) -> dict[tuple[str, int], list[Throughput]]:
    samples: dict[tuple[str, int], list[Throughput]] = {}
    for _round in range(plan["rounds"]):
        for k in plan["clients"]:
            for name, (measure, clear) in systems.items():
                clear()
                samples.setdefault((name, k), []).append(measure(k))
    measure_raw, clear_raw = systems["raw"]
    for k in plan["clients"]:
        runs = samples[("raw", k)]
        while (len(runs) < plan["raw_rounds"]
               and spread([r.per_second for r in runs[-plan["rounds"]:]]) >= RAW_SPREAD):
            clear_raw()
            runs.append(measure_raw(k))
        # The kept rounds: the last ones, as many as every other side has.
        samples[("raw", k)] = runs[-plan["rounds"]:]
    return samples


def _summarise(report: Report, engine: str, plan, samples, durability: str, workers: int,
               server: PlacementServer | None) -> None:
    report.notes.append(
        "claims: a cycle = (1) claim a new instance's flavor on its source provider "
        "(consumer generation None), (2) one atomic two-consumer write moving the source "
        "claim to a migration consumer and the instance to the destination. Each client "
        "owns one source/destination pair. sql = in-process calls from K threads; "
        f"sql-procs = the same K clients over {workers} processes (as many as Placement's "
        "workers); placement = rtframework's http backend against OpenStack Placement "
        f"({server.serving.describe() if server else 'not run'}); raw = one-row "
        "INSERT+COMMIT transactions; statement (PostgreSQL) = claims of new instances by "
        "the one-statement write's prepared statement alone on K DBAPI connections. "
        "sql/raw compares allocation write transactions (2 per cycle) with raw commits, "
        "statement/raw the statement's writes with them. "
        f"Median of {plan['rounds']} interleaved rounds of "
        f"{plan['seconds']}s, min-max beside it. {engine} durability: {durability}.")
    rates: dict[tuple[str, int], float] = {}
    errors: dict[tuple[str, int], int] = {}
    spreads: dict[int, float] = {}
    for k in plan["clients"]:
        for name in ("sql", "sql-procs", "placement", "raw", "statement"):
            runs = samples.get((name, k))
            if not runs:
                continue
            per_second = [r.per_second for r in runs]
            rates[name, k] = median(per_second)
            errors[name, k] = sum(r.errors for r in runs)
            unit = {"raw": "commits/s", "statement": "writes/s"}.get(name, "cycles/s")
            detail = f"{errors[name, k]} errors: {next(r.first_error for r in runs if r.errors)}" \
                if errors[name, k] else ""
            if name == "raw":
                spreads[k] = spread(per_second)
                detail = "; ".join(filter(None, [detail, f"spread {spreads[k]:.0%}"]))
            report.figures.append(Figure(BENCH, engine, f"K={k} {name}", rates[name, k], unit,
                                         detail, min(per_second), max(per_second)))
        _verdicts(report, engine, k, rates, errors, spreads.get(k))
    first, last = min(plan["clients"]), max(plan["clients"])
    if ("sql", first) in rates and rates["sql", first]:
        scaling = rates["sql", last] / rates["sql", first]
        report.figures.append(Figure(BENCH, engine, f"sql K={last}/K={first}", scaling, "x",
                                     "throughput scaling"))
        if engine == TARGET_ENGINE:
            report.verdicts.append(_verdict(
                engine, f"sql throughput K={last} >= {TARGET_SCALING:g}x K={first}",
                f"{scaling:.2f}x", scaling >= TARGET_SCALING,
                errors.get(("sql", first), 0) + errors.get(("sql", last), 0)))


def _verdict(engine: str, target: str, measured: str, met: bool, error_count: int) -> Verdict:
    """A verdict that is a MISS whenever a side it compares had errors."""
    if error_count:
        measured = f"{measured} ({error_count} errors)"
    return Verdict(BENCH, engine, target, measured, met and not error_count)


def _verdicts(report: Report, engine: str, k: int, rates, errors,
              raw_spread: float | None) -> None:
    sql, placement, raw = rates.get(("sql", k)), rates.get(("placement", k)), rates.get(("raw", k))
    if placement:
        ratio = sql / placement
        report.figures.append(Figure(BENCH, engine, f"K={k} sql/placement", ratio, "x"))
        if ("sql-procs", k) in rates:
            report.figures.append(Figure(BENCH, engine, f"K={k} sql-procs/placement",
                                         rates["sql-procs", k] / placement, "x"))
        if engine == TARGET_ENGINE:
            report.verdicts.append(_verdict(
                engine, f"K={k}: sql >= {TARGET_VS_PLACEMENT:g}x Placement", f"{ratio:.2f}x",
                ratio >= TARGET_VS_PLACEMENT,
                errors.get(("sql", k), 0) + errors.get(("placement", k), 0)))
    if raw and ("statement", k) in rates:
        failed = errors.get(("statement", k), 0) + errors.get(("raw", k), 0)
        report.figures.append(Figure(
            BENCH, engine, f"K={k} statement/raw", rates["statement", k] / raw * 100, "%",
            "the statement's writes/s over raw commits/s"
            + (f" ({failed} errors)" if failed else "")))
    if raw:
        ratio = sql * WRITES_PER_CYCLE / raw
        report.figures.append(Figure(BENCH, engine, f"K={k} sql/raw", ratio * 100, "%",
                                     "allocation writes/s over raw commits/s"))
        if engine == TARGET_ENGINE:
            settled = raw_spread is not None and raw_spread < RAW_SPREAD
            met = ratio >= TARGET_VS_RAW and settled
            measured = f"{ratio:.0%}" + (
                "" if settled else f" (raw rounds spread {raw_spread:.0%}, not settled)")
            report.verdicts.append(_verdict(
                engine, f"K={k}: sql >= {TARGET_VS_RAW:.0%} of raw commits", measured, met,
                errors.get(("sql", k), 0) + errors.get(("raw", k), 0)))
