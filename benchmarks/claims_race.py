"""Claims race: writers claiming and releasing on ONE provider.

Every writer (a thread with its own backend, so its own connections)
alternates a claim of 1 VCPU for a new consumer and the release of it, on
one provider with room for fewer claims than there are writers, so the
writers collide on the provider's generation all the time. On a Galera
cluster writer ``i`` writes through node ``i % 3``: collisions between
nodes surface as certification failures at commit (1213), which the retry
layer retries with backoff and jitter like any lost race.

Reported: how many writes gave up (RetriesExhausted after the retry
budget), were refused for capacity (the expected answer when the provider
is full), or failed otherwise; the highest usage any node showed while the
race ran (a monitor reads every node) and at the end; whether every node
holds the same allocations at the end.
"""

from __future__ import annotations

import os
import threading
import time
import uuid as uuidlib
from collections import Counter
from dataclasses import dataclass

from rtframework import conf as rtconf
from rtframework.placement import errors
from rtframework.placement import types as t
from rtframework.placement.sql.backend import SQLBackend
from tests.fixtures import databases

BENCH = "claims_race"
CAPACITY = 4
WRITERS, OPERATIONS = 6, 400
TARGET_GAVE_UP = 0.005


@dataclass(frozen=True)
class RaceOutcome:
    writes: int
    outcomes: dict[str, int]  # done / capacity / gave_up / error -> count
    max_usage_seen: int
    final_usage: int
    nodes_agree: bool
    seconds: float
    errors: tuple[str, ...] = ()

    @property
    def gave_up_share(self) -> float:
        return self.outcomes.get("gave_up", 0) / self.writes if self.writes else 0.0

    @property
    def overcommitted(self) -> bool:
        return max(self.max_usage_seen, self.final_usage) > CAPACITY


def backend_on(url: str, state_path: str) -> SQLBackend:
    conf = rtconf.new_conf()
    conf([], project="rtframework", default_config_files=[])
    conf.set_override("connection", url, group="placement_database")
    conf.set_override("state_path", state_path)
    return SQLBackend(conf)


def race(urls: list[str], state_path: str, writers: int = WRITERS,
         operations: int = OPERATIONS) -> RaceOutcome:
    """Run the race; writer ``i`` writes through ``urls[i % len(urls)]``."""
    backends = [backend_on(urls[i % len(urls)], state_path) for i in range(writers)]
    readers = [backend_on(url, state_path) for url in urls]
    try:
        provider = backends[0].create_provider(f"race-{uuidlib.uuid4().hex[:12]}")
        backends[0].set_inventories(provider.uuid, provider.generation,
                                    {"VCPU": t.Inventory(total=CAPACITY)})
        return _race(backends, readers, provider.uuid, operations)
    finally:
        for b in backends + readers:
            b.close()


def _race(backends, readers, provider: str, operations: int) -> RaceOutcome:
    counts: Counter[str] = Counter()
    failures: list[str] = []
    lock = threading.Lock()
    done = threading.Event()
    highest = [0]
    start = threading.Barrier(len(backends) + 1)

    def monitor() -> None:
        while not done.is_set():
            for reader in readers:
                used = reader.get_provider_usages(provider).get("VCPU", 0)
                highest[0] = max(highest[0], used)
            time.sleep(0.01)

    def writer(backend: SQLBackend) -> None:
        held: str | None = None
        start.wait()
        for _ in range(operations):
            try:
                if held is None:
                    consumer = str(uuidlib.uuid4())
                    backend.put_allocations(consumer, {provider: {"VCPU": 1}},
                                            project_id="race", user_id="race",
                                            consumer_generation=None)
                    held = consumer
                else:
                    backend.delete_allocations(held)
                    held = None
                outcome = "done"
            except errors.CapacityExceeded:
                outcome = "capacity"
            except errors.GenerationConflict:
                outcome = "gave_up"
            except errors.PlacementError as exc:
                outcome = "error"
                with lock:
                    failures.append(f"{type(exc).__name__}: {exc}")
            with lock:
                counts[outcome] += 1

    threads = [threading.Thread(target=writer, args=(b,)) for b in backends]
    watcher = threading.Thread(target=monitor)
    for thread in threads:
        thread.start()
    watcher.start()
    start.wait()
    began = time.perf_counter()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - began
    done.set()
    watcher.join()
    views = [reader.get_provider_allocations(provider) for reader in readers]
    return RaceOutcome(
        writes=sum(counts.values()), outcomes=dict(counts), max_usage_seen=highest[0],
        final_usage=readers[0].get_provider_usages(provider).get("VCPU", 0),
        nodes_agree=all(view == views[0] for view in views), seconds=seconds,
        errors=tuple(failures[:5]))


def run(engine: str, work_dir: str, quick: bool, server=None):
    """The benchmark runner's entry: on ``galera`` the writers spread over
    the three nodes, elsewhere they share the one server."""
    from benchmarks.results import Figure, Report, Verdict

    operations = 40 if quick else OPERATIONS
    report = Report()
    os.makedirs(work_dir, exist_ok=True)
    with databases.temporary_database(engine, work_dir) as url:
        nodes = writer_urls(url, engine)
        outcome = race(nodes, work_dir, WRITERS, operations)
    case = f"{WRITERS} writers x {operations} ops, {len(nodes)} node(s)"
    detail = (f"{outcome.outcomes}; max usage seen {outcome.max_usage_seen}/{CAPACITY}, "
              f"final {outcome.final_usage}; nodes agree: {outcome.nodes_agree}; "
              f"{outcome.seconds:.1f} s")
    report.figures.append(Figure(BENCH, engine, case, 100 * outcome.gave_up_share,
                                 "% gave up", detail))
    report.verdicts.append(Verdict(
        BENCH, engine, f"< {100 * TARGET_GAVE_UP}% gave up, 0 overcommit, nodes agree",
        f"{100 * outcome.gave_up_share:.2f}%, max {outcome.max_usage_seen}/{CAPACITY}, "
        f"agree={outcome.nodes_agree}",
        outcome.gave_up_share < TARGET_GAVE_UP and not outcome.overcommitted
        and outcome.nodes_agree and not outcome.errors))
    if outcome.errors:
        report.notes.append(f"{BENCH} on {engine}: other errors: {'; '.join(outcome.errors)}")
    return report


def writer_urls(url: str, engine: str | None = None) -> list[str]:
    """``url`` itself, or on a Galera cluster one single-node URL per node
    (three writing nodes, no failover to one of them)."""
    database = url.split("?")[0].rsplit("/", 1)[1]
    nodes = databases.cluster_node_urls(database, engine)
    if not nodes:
        return [url]
    return [u.split("?")[0].replace("root:@/", f"root:@{u.split('?host=', 1)[1].split('&')[0]}/")
            for u in nodes]
