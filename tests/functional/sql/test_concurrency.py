"""Concurrent writers on one provider: capacity holds, losers are told.

Threads share one SQLBackend (one connection pool); processes each open
their own, as separate hosts would. Every writer claims with its own
consumer, so only the provider generation CAS keeps them apart.
"""

from __future__ import annotations

import multiprocessing
import threading
import uuid

import pytest

from rtframework.placement import errors
from rtframework.placement import types as t
from rtframework.placement.sql.backend import SQLBackend
from tests.functional.sql.conftest import make_conf

CAPACITY = 10
AMOUNT = 2
WRITERS = 12


@pytest.fixture
def provider(backend):
    rp = backend.create_provider(f"race-{uuid.uuid4().hex}")
    backend.set_inventories(rp.uuid, 0, {"VCPU": t.Inventory(total=CAPACITY)})
    return rp.uuid


def claim(backend: SQLBackend, provider: str, consumer: str) -> str:
    """One writer's attempt; the outcome as a word."""
    try:
        backend.put_allocations(consumer, {provider: {"VCPU": AMOUNT}}, project_id="p",
                                user_id="u", consumer_generation=None)
    except errors.CapacityExceeded:
        return "capacity"
    except errors.GenerationConflict:
        return "conflict"
    return "won"


def check_outcome(backend: SQLBackend, provider: str, outcomes: dict[str, str]) -> None:
    winners = [c for c, outcome in outcomes.items() if outcome == "won"]
    assert set(outcomes.values()) <= {"won", "capacity", "conflict"}
    assert len(winners) == CAPACITY // AMOUNT
    assert backend.get_provider_usages(provider) == {"VCPU": CAPACITY}
    # Every winner holds exactly what it claimed; no loser holds anything.
    held = backend.get_provider_allocations(provider)
    assert held == {c: {"VCPU": AMOUNT} for c in winners}


def test_threads_never_exceed_capacity(backend, provider):
    consumers = [str(uuid.uuid4()) for _ in range(WRITERS)]
    outcomes: dict[str, str] = {}
    start = threading.Barrier(WRITERS)

    def run(consumer):
        start.wait()
        outcomes[consumer] = claim(backend, provider, consumer)

    threads = [threading.Thread(target=run, args=(c,)) for c in consumers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(outcomes) == WRITERS
    check_outcome(backend, provider, outcomes)


def _process_writer(url, state_path, provider, consumer, start, results):
    b = SQLBackend(make_conf(url, state_path))
    try:
        start.wait()
        results.put((consumer, claim(b, provider, consumer)))
    finally:
        b.close()


def test_processes_never_exceed_capacity(backend, provider, database_url, tmp_path):
    """Separate processes, as separate hosts: no shared pool or lock."""
    ctx = multiprocessing.get_context("fork")
    start, results = ctx.Barrier(WRITERS), ctx.Queue()
    consumers = [str(uuid.uuid4()) for _ in range(WRITERS)]
    # The children open their own engines; the parent's pooled connections
    # must not be shared across fork.
    for engine in backend.engines:
        engine.dispose()
    procs = [ctx.Process(target=_process_writer,
                         args=(database_url, str(tmp_path), provider, c, start, results))
             for c in consumers]
    for proc in procs:
        proc.start()
    outcomes = dict(results.get(timeout=120) for _ in procs)
    for proc in procs:
        proc.join(timeout=30)
        assert proc.exitcode == 0
    check_outcome(backend, provider, outcomes)


def _race_one_consumer(backend, provider, consumer, generation) -> list[str]:
    """Two writers, same consumer, same expected generation, different
    amounts; their outcomes."""
    outcomes: list[str] = []
    start = threading.Barrier(2)

    def run(amount):
        start.wait()
        try:
            backend.put_allocations(consumer, {provider: {"VCPU": amount}}, project_id="p",
                                    user_id="u", consumer_generation=generation)
            outcomes.append(f"won:{amount}")
        except errors.ConsumerGenerationConflict:
            outcomes.append("consumer-conflict")

    threads = [threading.Thread(target=run, args=(a,)) for a in (2, 3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return outcomes


@pytest.mark.parametrize("generation", [None, 1], ids=["new-consumer", "existing-consumer"])
def test_same_consumer_same_generation_exactly_one_wins(backend, provider, generation):
    for _round in range(5):
        consumer = str(uuid.uuid4())
        if generation is not None:
            backend.put_allocations(consumer, {provider: {"VCPU": 1}}, project_id="p",
                                    user_id="u", consumer_generation=None)
        outcomes = _race_one_consumer(backend, provider, consumer, generation)
        assert sorted(o.split(":")[0] for o in outcomes) == ["consumer-conflict", "won"]
        winner = int(next(o for o in outcomes if o.startswith("won")).split(":")[1])
        got = backend.get_consumer_allocations(consumer)
        assert got.allocations == {provider: {"VCPU": winner}}
        assert got.generation == (1 if generation is None else 2)
        backend.delete_allocations(consumer)
