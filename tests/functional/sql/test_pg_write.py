"""The one-statement allocation write on PostgreSQL (``pg_write``).

It may only write what the general write would write, and must decline
(leaving nothing behind) whenever the general write has an error to name
or a race to retry. Races inside one statement are forced without sleeps:
a rival transaction holds the row the statement must lock, the test waits
until the statement is blocked on it (pg_stat_activity), then the rival
commits.
"""

from __future__ import annotations

import threading
import time
import uuid

import pytest
import sqlalchemy as sa

from rtframework.placement import errors
from rtframework.placement import types as t
from rtframework.placement.sql import allocations as alloc
from rtframework.placement.sql import pg_write
from tests.fixtures import databases

pytestmark = pytest.mark.skipif(databases.selected_engine() != "postgresql",
                                reason="the one-statement write is PostgreSQL's")


@pytest.fixture
def calls(monkeypatch):
    """What each write did: 'fast' (written in one statement), 'declined',
    'general' (the general write ran)."""
    seen: list[str] = []
    real_try, real_once = pg_write.try_write, alloc.write_once

    def try_write(conn, writes):
        written = real_try(conn, writes)
        seen.append("fast" if written else "declined")
        return written

    def write_once(conn, writes):
        seen.append("general")
        return real_once(conn, writes)

    monkeypatch.setattr(pg_write, "try_write", try_write)
    monkeypatch.setattr(alloc, "write_once", write_once)
    return seen


def _provider(backend, total=8, **inv):
    rp = backend.create_provider(f"pgw-{uuid.uuid4().hex}")
    backend.set_inventories(rp.uuid, 0, {"VCPU": t.Inventory(total=total, **inv)})
    return rp.uuid


def _claim(backend, consumer, allocations, generation=None):
    backend.put_allocations(consumer, allocations, project_id="p", user_id="u",
                            consumer_generation=generation)


def _new() -> str:
    return str(uuid.uuid4())


def test_a_valid_write_is_one_statement(backend, calls):
    provider, other = _provider(backend), _provider(backend)
    mine = _new()
    _claim(backend, mine, {provider: {"VCPU": 2}})
    _claim(backend, mine, {other: {"VCPU": 3}}, generation=1)
    _claim(backend, mine, {}, generation=2)
    assert calls == ["fast", "fast", "fast"]
    assert backend.get_consumer_allocations(mine).generation is None
    assert backend.get_provider(provider).generation == 1 + 2
    assert backend.get_provider(other).generation == 1 + 2


@pytest.mark.parametrize("allocations, generation, error", [
    ({"VCPU": 10}, None, errors.CapacityExceeded),
    ({"VCPU": 3}, None, errors.InvalidAllocation),  # step_size 2
    ({"DISK_GB": 1}, None, errors.InvalidAllocation),  # no inventory
    ({"CUSTOM_NOWHERE": 1}, None, errors.ResourceClassNotFound),
    ({"VCPU": 2}, 4, errors.ConsumerGenerationConflict),
])
def test_what_the_general_write_refuses_is_declined_and_changes_nothing(
        backend, calls, allocations, generation, error):
    provider = _provider(backend, step_size=2)
    mine = _new()
    with pytest.raises(error):
        _claim(backend, mine, {provider: allocations}, generation)
    assert calls == ["declined", "general"]
    assert backend.get_provider(provider).generation == 1
    assert backend.get_provider_allocations(provider) == {}


def test_a_provider_over_capacity_is_left_to_the_general_write(backend, calls):
    provider = _provider(backend, total=4)
    mine = _new()
    _claim(backend, mine, {provider: {"VCPU": 4}})
    backend.set_inventories(provider, 2, {"VCPU": t.Inventory(total=2)})
    # Usage 4 > capacity 2: shrinking what the consumer holds is allowed
    # (the general rule), the statement's stricter check declines it.
    _claim(backend, mine, {provider: {"VCPU": 3}}, generation=1)
    assert calls == ["fast", "declined", "general"]
    assert backend.get_provider_allocations(provider) == {mine: {"VCPU": 3}}


def test_a_consumer_that_holds_nothing_is_left_to_the_general_write(backend, calls):
    # Only the providers a consumer holds guard its generation in the
    # statement; a consumer row without allocations has none.
    provider = _provider(backend)
    mine = _new()
    with backend.engine.begin() as conn:
        conn.execute(sa.text("INSERT INTO consumers (uuid, project_id, user_id, generation) "
                             "VALUES (:u, 'p', 'u', 3)"), {"u": mine})
    _claim(backend, mine, {provider: {"VCPU": 2}}, generation=3)
    assert calls == ["declined", "general"]
    got = backend.get_consumer_allocations(mine)
    assert (got.allocations, got.generation) == ({provider: {"VCPU": 2}}, 4)


def _blocked_on_a_lock(engine, writer: set[int], rival: int, deadline=30.0) -> None:
    """Wait until one of the writer's connections (backend pids ``writer``)
    waits for a lock the rival (backend pid ``rival``) holds; any other
    session's wait does not count."""
    began = time.monotonic()
    with engine.connect() as conn:
        while time.monotonic() - began < deadline:
            waiting = conn.execute(sa.text(
                "SELECT count(*) FROM pg_stat_activity "
                "WHERE pid = ANY(CAST(:writer AS integer[])) AND wait_event_type = 'Lock' "
                "AND :rival = ANY(pg_blocking_pids(pid))"),
                {"writer": sorted(writer), "rival": rival}).scalar()
            conn.rollback()
            if waiting:
                return
            time.sleep(0.01)
    raise AssertionError("the write never waited for the rival's lock")


def _racing(backend, rival_sql: str, params: dict, write) -> list:
    """Run ``write`` while a rival transaction that ran ``rival_sql``
    holds its locks; the rival commits once ``write`` waits for them."""
    outcome: list = []
    writer_pids: set[int] = set()

    def run():
        try:
            write()
            outcome.append(None)
        except Exception as exc:  # noqa: BLE001 - handed to the test
            outcome.append(exc)

    writer = threading.Thread(target=run)

    def note_writer(conn, _cursor, _statement, _params, _context, _many):
        if threading.current_thread() is writer:
            writer_pids.add(conn.connection.dbapi_connection.get_backend_pid())

    engines = backend.engines
    for engine in engines:
        sa.event.listen(engine, "before_cursor_execute", note_writer)
    try:
        with backend.engine.connect() as rival:
            rival_pid = rival.execute(sa.text("SELECT pg_backend_pid()")).scalar()
            rival.execute(sa.text(rival_sql), params)
            writer.start()
            _blocked_on_a_lock(backend.engine, writer_pids, rival_pid)
            rival.commit()
            writer.join(60)
    finally:
        for engine in engines:
            sa.event.remove(engine, "before_cursor_execute", note_writer)
    assert outcome, "the write did not finish"
    return outcome


def test_a_provider_bumped_meanwhile_is_declined_and_written_by_the_general_write(
        backend, calls):
    provider = _provider(backend)
    mine = _new()
    outcome = _racing(
        backend, "UPDATE resource_providers SET generation = generation + 1 WHERE uuid = :u",
        {"u": provider}, lambda: _claim(backend, mine, {provider: {"VCPU": 2}}))
    assert outcome == [None]
    # Holding the lock, the statement found the generation moved since its
    # snapshot and wrote nothing; the general write re-read and wrote.
    assert calls == ["declined", "general"]
    assert backend.get_provider_allocations(provider) == {mine: {"VCPU": 2}}
    assert backend.get_provider(provider).generation == 1 + 1 + 1  # inventory, rival, mine


def test_a_consumer_created_meanwhile_is_a_consumer_conflict(backend, calls):
    provider = _provider(backend)
    mine = _new()
    outcome = _racing(
        backend, "INSERT INTO consumers (uuid, project_id, user_id, generation) "
        "VALUES (:u, 'p', 'u', 1)", {"u": mine},
        lambda: _claim(backend, mine, {provider: {"VCPU": 2}}))
    assert isinstance(outcome[0], errors.ConsumerGenerationConflict)
    # The statement failed on the rival's row (a unique violation), so none
    # of it stayed; the general write found the consumer and named the
    # conflict.
    assert calls == ["general"]
    assert backend.get_provider(provider).generation == 1
    assert backend.get_provider_allocations(provider) == {}


def test_a_consumer_changed_meanwhile_without_its_providers_is_declined(backend, calls):
    # A rival that moves the consumer's generation but bumps none of its
    # providers (no writer of this project does that today): the statement
    # must see the new generation under the consumer's lock and write
    # nothing, so the general write names the conflict.
    provider = _provider(backend)
    mine = _new()
    _claim(backend, mine, {provider: {"VCPU": 2}})
    outcome = _racing(
        backend, "UPDATE consumers SET generation = generation + 1 WHERE uuid = :u",
        {"u": mine}, lambda: _claim(backend, mine, {provider: {"VCPU": 4}}, generation=1))
    assert isinstance(outcome[0], errors.ConsumerGenerationConflict)
    assert calls == ["fast", "declined", "general"]
    assert backend.get_provider_allocations(provider) == {mine: {"VCPU": 2}}
    assert backend.get_provider(provider).generation == 1 + 1  # inventory, first claim


def _statements(backend, prefix: str) -> list[int]:
    """The backend pid of each statement starting with ``prefix`` that the
    backend sends from now on."""
    seen: list[int] = []

    def note(conn, _cursor, statement, _params, _context, _many):
        if statement.lstrip().upper().startswith(prefix):
            seen.append(conn.connection.dbapi_connection.get_backend_pid())

    sa.event.listen(backend.statement_engine, "before_cursor_execute", note)
    return seen


def test_the_statement_is_prepared_once_per_connection(backend, calls):
    provider = _provider(backend)
    mine = _new()
    prepared = _statements(backend, "PREPARE")
    for generation in (None, 1, 2, 3):
        _claim(backend, mine, {provider: {"VCPU": 2}}, generation)
    assert calls == ["fast"] * 4
    assert prepared and len(prepared) == len(set(prepared))


def test_a_session_that_prepared_it_already_writes_in_one_statement(backend, calls):
    # The connection's note that it prepared the statement is gone (as
    # after a failure between PREPARE and noting it): PREPARE says it
    # exists, and the write goes on with it.
    sa.event.listen(backend.statement_engine, "checkout",
                    lambda _dbapi, record, _proxy: record.info.pop(pg_write._PREPARED, None))
    provider = _provider(backend)
    mine = _new()
    prepared = _statements(backend, "PREPARE")
    for generation in (None, 1, 2):
        _claim(backend, mine, {provider: {"VCPU": 2}}, generation)
    assert calls == ["fast", "fast", "fast"]
    assert len(prepared) == 3 and len(set(prepared)) < 3
    assert backend.get_consumer_allocations(mine).generation == 3


def test_a_session_that_lost_the_statement_is_declined_once_then_prepares_again(
        backend, calls):
    # A pooling proxy between us and the server gave us another session:
    # the prepared statement is gone although the connection noted it.
    provider = _provider(backend)
    mine = _new()
    _claim(backend, mine, {provider: {"VCPU": 2}})
    lost: list[int] = []

    def forget(dbapi, record, _proxy):
        if not lost and record.info.get(pg_write._PREPARED):
            with dbapi.cursor() as cur:
                cur.execute("DEALLOCATE ALL")
            dbapi.commit()
            lost.append(dbapi.get_backend_pid())

    sa.event.listen(backend.statement_engine, "checkout", forget)
    for generation in (1, 2, 3):
        _claim(backend, mine, {provider: {"VCPU": 2 + generation}}, generation)
    assert lost
    # The write on that session declined (nothing written) and the general
    # write wrote it; every other write was one statement.
    at = calls.index("declined")
    assert calls[at + 1] == "general"
    assert calls[:at] + calls[at + 2:] == ["fast"] * 3
    got = backend.get_consumer_allocations(mine)
    assert (got.allocations, got.generation) == ({provider: {"VCPU": 5}}, 4)


def test_the_plan_reads_every_table_through_its_indexes(backend, calls):
    """A new database has no statistics yet: a plan left to the planner
    then scans the consumers and allocations tables whole, and each write
    costs more as they grow (see pg_write.SESSION_SETTINGS). Sequential
    scans are off in the statement's sessions, so one in the plan is a
    condition no index can serve: a write then reads every provider of
    the cloud (15 ms a write at 100,000 providers, ``python -m benchmarks
    --only scale``)."""
    provider = _provider(backend, total=1000)
    for _ in range(20):
        _claim(backend, _new(), {provider: {"VCPU": 1}})
    assert calls == ["fast"] * 20
    mine = _new()
    with backend.statement_engine.connect() as conn:
        if not conn.connection.info.get(pg_write._PREPARED):
            conn.execute(pg_write._PREPARE)
        plan = "\n".join(conn.execute(sa.text("EXPLAIN " + pg_write._EXECUTE.text), {
            "w_uuids": [mine], "w_gens": [None], "w_projects": ["p"], "w_users": ["u"],
            "w_types": ["INSTANCE"], "w_holds": [True], "r_consumers": [mine],
            "r_providers": [provider], "r_classes": ["VCPU"], "r_used": [1]}).scalars())
        conn.rollback()
    assert "Seq Scan" not in plan, plan
    assert "Index" in plan


def test_only_the_statement_sessions_plan_generically_without_sequential_scans(backend):
    def settings(engine) -> tuple[str, str]:
        with engine.connect() as conn:
            return (conn.exec_driver_sql("SHOW plan_cache_mode").scalar(),
                    conn.exec_driver_sql("SHOW enable_seqscan").scalar())

    assert settings(backend.statement_engine) == ("force_generic_plan", "off")
    # Searches and the general write plan as the server is configured.
    assert settings(backend.engine) == ("auto", "on")
