"""Every retry path of the sql backend's allocation write, driven on purpose.

SQLite serializes writers, so these paths run only by luck there; on
PostgreSQL and MariaDB each is forced here, without sleeps: a hook runs
inside the writer's transaction, after it has read and decided and just
before it applies its plan, and does what a racing writer would do (on
another pooled connection, committed before the writer goes on), or makes
the database itself raise a transient or a lasting error. Every test
asserts what the caller gets and what placement holds afterwards.

These drive the general write (read, decide, apply a plan). On PostgreSQL
a write first tries the one-statement write, which has no step between
reading and writing to hook into: it is switched off here, and its own
races are forced in test_pg_write.py.
"""

from __future__ import annotations

import uuid

import pytest
import sqlalchemy as sa

from rtframework.placement import errors
from rtframework.placement import types as t
from rtframework.placement.sql import pg_write, write_plan
from rtframework.placement.sql.backend import SQLBackend
from tests.fixtures import databases
from tests.functional.sql.conftest import make_conf

pytestmark = pytest.mark.skipif(
    databases.selected_engine() == "sqlite",
    reason="SQLite serializes writers: none of these races can happen there")

SMALL_RETRIES = 2

# Errors raised by the database server itself, inside the transaction.
DEADLOCK = {
    "postgresql": "DO $$ BEGIN RAISE EXCEPTION 'deadlock (injected)' "
                  "USING ERRCODE = '40P01'; END $$",
    "mysql": "SIGNAL SQLSTATE '40001' SET MYSQL_ERRNO = 1213, "
             "MESSAGE_TEXT = 'Deadlock found (injected)'",
}
INTERRUPTED = {  # an operational error that is not a lost race
    "postgresql": "DO $$ BEGIN RAISE EXCEPTION 'query canceled (injected)' "
                  "USING ERRCODE = '57014'; END $$",
    "mysql": "SIGNAL SQLSTATE 'HY000' SET MYSQL_ERRNO = 1317, "
             "MESSAGE_TEXT = 'Query execution was interrupted (injected)'",
}


@pytest.fixture
def backend(database_url, tmp_path):
    conf = make_conf(database_url, str(tmp_path))
    conf.set_override("conflict_retries", SMALL_RETRIES, group="placement")
    b = SQLBackend(conf)
    yield b
    b.close()


@pytest.fixture
def provider(backend):
    return _provider(backend)


def _provider(backend, total=8):
    rp = backend.create_provider(f"retry-{uuid.uuid4().hex}")
    backend.set_inventories(rp.uuid, 0, {"VCPU": t.Inventory(total=total)})
    return rp.uuid


def _claim(backend, consumer, allocations, generation=None):
    backend.put_allocations(consumer, allocations, project_id="p", user_id="u",
                            consumer_generation=generation)


def _new() -> str:
    return str(uuid.uuid4())


@pytest.fixture
def before_apply(monkeypatch):
    """``before_apply(action, times)``: run ``action(conn)`` inside the
    writer's transaction, just before the first ``times`` applies of its
    plan; returns the list of attempts seen."""
    real = write_plan.apply

    def install(action, times=1):
        attempts: list[int] = []
        rival = []  # set while the action runs: its own writes pass through

        def apply(conn, plan):
            if rival:
                return real(conn, plan)
            attempts.append(len(attempts) + 1)
            if len(attempts) <= times:
                rival.append(True)
                try:
                    action(conn)
                finally:
                    rival.clear()
            return real(conn, plan)

        monkeypatch.setattr(write_plan, "apply", apply)
        monkeypatch.setattr(pg_write, "try_write", lambda conn, writes: False)
        return attempts

    return install


def test_a_provider_race_is_won_on_retry(backend, provider, before_apply):
    rival, mine = _new(), _new()
    attempts = before_apply(lambda conn: _claim(backend, rival, {provider: {"VCPU": 3}}))

    _claim(backend, mine, {provider: {"VCPU": 2}})

    # The first attempt lost the provider generation to the rival; the
    # second re-read (seeing the rival) and wrote.
    assert attempts == [1, 2]
    assert backend.get_provider_allocations(provider) == {
        rival: {"VCPU": 3}, mine: {"VCPU": 2}}
    assert backend.get_provider_usages(provider) == {"VCPU": 5}
    assert backend.get_provider(provider).generation == 1 + 2  # inventory + two writes


def test_a_retry_rechecks_capacity_with_what_the_rival_took(backend, provider, before_apply):
    rival, mine = _new(), _new()
    attempts = before_apply(lambda conn: _claim(backend, rival, {provider: {"VCPU": 7}}))

    with pytest.raises(errors.CapacityExceeded, match="used 7 \\+ requested 2 > capacity 8"):
        _claim(backend, mine, {provider: {"VCPU": 2}})

    # The first apply lost the race; the second attempt re-read, saw the
    # rival's 7 (the message says so) and refused before applying anything.
    assert attempts == [1]
    assert backend.get_provider_allocations(provider) == {rival: {"VCPU": 7}}
    assert backend.get_consumer_allocations(mine).generation is None


def test_retries_run_out_after_the_configured_count(backend, provider, before_apply):
    mine = _new()
    attempts = before_apply(lambda conn: _claim(backend, _new(), {provider: {"VCPU": 1}}),
                            times=100)

    with pytest.raises(errors.GenerationConflict,
                       match=f"{mine}.*after {SMALL_RETRIES + 1} attempt") as caught:
        _claim(backend, mine, {provider: {"VCPU": 1}})

    assert not isinstance(caught.value, errors.ConsumerGenerationConflict)
    assert len(attempts) == SMALL_RETRIES + 1
    held = backend.get_provider_allocations(provider)
    assert mine not in held and len(held) == SMALL_RETRIES + 1  # the rivals only
    assert backend.get_consumer_allocations(mine).generation is None


def test_concurrent_creation_of_one_consumer_is_a_consumer_conflict(
        backend, provider, before_apply):
    other = _provider(backend)
    consumer = _new()
    # The rival creates the same consumer on another provider, so this
    # writer's provider generation still holds and only the consumer row
    # collides.
    attempts = before_apply(lambda conn: _claim(backend, consumer, {other: {"VCPU": 1}}))

    with pytest.raises(errors.ConsumerGenerationConflict) as conflict:
        _claim(backend, consumer, {provider: {"VCPU": 2}})

    assert str(conflict.value) == (
        "consumer generation conflict - expected the generation another writer just "
        f"created but got null (consumer {consumer})")
    assert attempts == [1]  # never retried: the caller must re-read and decide
    got = backend.get_consumer_allocations(consumer)
    assert (got.allocations, got.generation) == ({other: {"VCPU": 1}}, 1)
    assert backend.get_provider_usages(provider) == {"VCPU": 0}
    assert backend.get_provider(provider).generation == 1  # untouched


def test_a_provider_deleted_during_the_write_is_not_found(backend, provider, before_apply):
    mine = _new()
    attempts = before_apply(lambda conn: backend.delete_provider(provider))

    with pytest.raises(errors.ProviderNotFound) as gone:
        _claim(backend, mine, {provider: {"VCPU": 2}})

    assert str(gone.value) == (
        f"resource provider {provider} not found (allocation of consumer {mine})")
    assert attempts == [1]  # the re-read finds no provider and applies nothing
    assert backend.get_consumer_allocations(mine).generation is None
    with pytest.raises(errors.ProviderNotFound):
        backend.get_provider(provider)


def test_a_transient_database_error_is_retried_and_the_write_lands_once(
        backend, provider, before_apply, db_engine_name):
    mine = _new()

    def deadlock(conn):
        conn.execute(sa.text(DEADLOCK[db_engine_name]))

    attempts = before_apply(deadlock)

    _claim(backend, mine, {provider: {"VCPU": 2}})

    assert len(attempts) == 2
    got = backend.get_consumer_allocations(mine)
    assert (got.allocations, got.generation) == ({provider: {"VCPU": 2}}, 1)
    assert backend.get_provider(provider).generation == 2  # inventory + one write


def test_a_transient_error_every_time_runs_out(backend, provider, before_apply,
                                               db_engine_name):
    mine = _new()
    attempts = before_apply(lambda conn: conn.execute(sa.text(DEADLOCK[db_engine_name])),
                            times=100)

    with pytest.raises(errors.PlacementError, match="deadlock|Deadlock"):
        _claim(backend, mine, {provider: {"VCPU": 2}})

    assert len(attempts) == SMALL_RETRIES + 1
    assert backend.get_provider_allocations(provider) == {}


def test_a_non_transient_database_error_is_not_retried(backend, provider, before_apply,
                                                       db_engine_name):
    mine = _new()
    attempts = before_apply(lambda conn: conn.execute(sa.text(INTERRUPTED[db_engine_name])),
                            times=100)

    with pytest.raises(errors.BackendUnavailable, match="interrupted|canceled"):
        _claim(backend, mine, {provider: {"VCPU": 2}})

    assert attempts == [1]
    assert backend.get_provider_allocations(provider) == {}
    assert backend.get_provider(provider).generation == 1


def test_a_transient_error_while_deleting_is_retried(backend, provider, monkeypatch,
                                                     db_engine_name):
    from rtframework.placement.sql import allocations as alloc

    mine = _new()
    _claim(backend, mine, {provider: {"VCPU": 2}})
    real = alloc.delete_consumer
    attempts: list[int] = []

    def delete_consumer(conn, consumer, why):
        attempts.append(1)
        real(conn, consumer, why)  # rows gone in this transaction ...
        if len(attempts) == 1:
            conn.execute(sa.text(DEADLOCK[db_engine_name]))  # ... then rolled back

    monkeypatch.setattr(alloc, "delete_consumer", delete_consumer)
    backend.delete_allocations(mine)

    assert len(attempts) == 2
    assert backend.get_provider_allocations(provider) == {}
    assert backend.get_consumer_allocations(mine).generation is None
