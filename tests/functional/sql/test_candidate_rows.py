"""How the candidate search reads its rows: the driver's own tuples, with
the driver's errors still handled as SQLAlchemy handles them; and how it
builds its answer: without automatic garbage collection, which it leaves
as the caller had it."""

from __future__ import annotations

import gc

import pytest
import sqlalchemy as sa

from rtframework import db
from rtframework.placement import errors, validation
from rtframework.placement import types as t
from rtframework.placement.sql import candidates
from tests.fixtures import databases

REQUEST = t.CandidateQuery(resources={"VCPU": 1, "MEMORY_MB": 64})


def _cloud(backend, hosts: int = 30) -> None:
    for i in range(hosts):
        rp = backend.create_provider(f"host-{i}")
        backend.set_inventories(rp.uuid, rp.generation, {
            "VCPU": t.Inventory(total=8), "MEMORY_MB": t.Inventory(total=1024)})
        backend.set_provider_traits(rp.uuid, rp.generation + 1,
                                    frozenset({"HW_CPU_X86_AVX2"} if i % 3 else ()))


def test_a_driver_error_while_the_rows_are_fetched_is_a_backend_error(backend):
    """sqlite3 runs a statement as its rows are fetched: an error there is
    the backend's BackendUnavailable, like one while it executes."""
    if databases.selected_engine() != "sqlite":
        pytest.skip("psycopg2 and PyMySQL read every row while they execute")
    _cloud(backend)
    interrupted = []

    def once() -> int:
        interrupted.append(True)
        return 1 if len(interrupted) == 1 else 0

    def interrupt_the_fetch(conn, cursor, statement, parameters, context, executemany):
        if "root_provider_id" in statement and not interrupted:
            conn.connection.dbapi_connection.set_progress_handler(once, 1)

    def stop_interrupting(dbapi_conn, record):
        dbapi_conn.set_progress_handler(None, 0)

    sa.event.listen(backend.engine, "after_cursor_execute", interrupt_the_fetch)
    sa.event.listen(backend.engine, "checkin", stop_interrupting)
    with pytest.raises(errors.BackendUnavailable, match="interrupted"):
        backend.get_allocation_candidates(REQUEST)
    assert interrupted
    sa.event.remove(backend.engine, "after_cursor_execute", interrupt_the_fetch)
    assert len(backend.get_allocation_candidates(REQUEST).allocation_requests) == 30


def test_rows_that_sqlalchemy_buffered_are_all_read(backend):
    """With streamed results SQLAlchemy holds rows of its own: the search
    reads them through it and loses none."""
    _cloud(backend)
    query = validation.candidate_query(REQUEST)
    with db.read(backend.engine) as conn:
        plain = candidates.find(conn, query)
    # A server-side cursor (PostgreSQL) needs a transaction.
    with db.transaction(backend.engine) as conn:
        streamed = candidates.find(conn.execution_options(stream_results=True), query)
    assert len(plain.allocation_requests) == 30
    assert streamed == plain


def test_the_rows_of_a_provider_need_not_be_adjacent():
    """One provider whose inventory rows come apart, a child whose parent
    is not among the rows: everything read, the missing parent unnamed."""
    rows = [
        (1, "root-1", None, 1, "MEMORY_MB", 1024, 0, 1, 1024, 1, 1.0, 0, "A,B"),
        (2, "child-2", 1, 1, "VCPU", 8, 0, 1, 8, 1, 1.0, 2, None),
        (1, "root-1", None, 1, "VCPU", 4, 0, 1, 4, 1, 2.0, 1, "A,B"),
        (3, "orphan-3", 9, 1, "DISK_GB", 10, 0, 1, 10, 1, 1.0, 0, "B,A"),
    ]
    trees = candidates._Trees.from_rows(rows)
    summaries: dict = {}
    trees.add_summaries(1, summaries)
    assert sorted(summaries) == ["child-2", "orphan-3", "root-1"]
    root = summaries["root-1"]
    assert {rc: (s.capacity, s.used) for rc, s in root.resources.items()} == {
        "MEMORY_MB": (1024, 0), "VCPU": (8, 1)}
    assert root.traits == frozenset({"A", "B"}) == summaries["orphan-3"].traits
    assert (summaries["child-2"].parent_uuid, summaries["child-2"].root_uuid) == (
        "root-1", "root-1")
    assert summaries["orphan-3"].parent_uuid is None


def test_the_answer_is_built_without_automatic_collection(backend, monkeypatch, collection_on):
    _cloud(backend, hosts=3)
    seen = []
    find = candidates.find

    def recording(conn, query):
        try:
            return find(conn, query)
        finally:
            seen.append(gc.isenabled())

    monkeypatch.setattr(candidates, "find", recording)
    assert len(backend.get_allocation_candidates(REQUEST).allocation_requests) == 3
    assert (seen, gc.isenabled()) == ([False], True)
    with pytest.raises(errors.PlacementError, match="CUSTOM_NOWHERE"):
        backend.get_allocation_candidates(t.CandidateQuery(resources={"CUSTOM_NOWHERE": 1}))
    assert (seen, gc.isenabled()) == ([False, False], True)
    gc.disable()
    backend.get_allocation_candidates(REQUEST)
    assert (seen, gc.isenabled()) == ([False, False, False], False)
