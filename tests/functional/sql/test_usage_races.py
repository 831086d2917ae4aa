"""The usage stored with each inventory stays the sum of its allocations
when another writer commits between an allocation write's reads and its
write (each race staged at the exact point; not on SQLite, which
serializes writers)."""

from __future__ import annotations

import threading
import time
import uuid

import pytest
import sqlalchemy as sa

from rtframework.placement import types as t
from rtframework.placement.sql import allocations as alloc
from rtframework.placement.sql import models as m
from rtframework.placement.sql import pg_write
from rtframework.placement.sql.backend import SQLBackend
from tests.fixtures import databases
from tests.functional.sql.conftest import make_conf

pytestmark = pytest.mark.skipif(
    databases.selected_engine() == "sqlite",
    reason="SQLite serializes writers: the second writer cannot commit in between")


def _providers(backend, *names):
    uuids = []
    for name in names:
        rp = backend.create_provider(f"{name}-{uuid.uuid4().hex[:8]}")
        backend.set_inventories(rp.uuid, 0, {"VCPU": t.Inventory(total=8)})
        uuids.append(rp.uuid)
    return uuids


def _write(backend, consumer, allocations, generation):
    backend.write_allocations([t.AllocationWrite(
        consumer_uuid=consumer, consumer_generation=generation, project_id="p", user_id="u",
        allocations=allocations)])


def test_a_delete_racing_a_move_releases_what_the_consumer_holds_then(
        backend, database_url, tmp_path, monkeypatch):
    """The move A -> B commits after the delete first read the consumer
    (on A): the delete is retried and releases B, not A again."""
    a, b = _providers(backend, "a", "b")
    consumer = str(uuid.uuid4())
    _write(backend, consumer, {a: {"VCPU": 2}}, None)
    other = SQLBackend(make_conf(database_url, str(tmp_path)))
    provider_select = alloc.queries.provider_select
    moved = []

    def then_move():
        if not moved:
            moved.append(True)
            _write(other, consumer, {b: {"VCPU": 2}},
                   other.get_consumer_allocations(consumer).generation)
        return provider_select()

    try:
        monkeypatch.setattr(alloc.queries, "provider_select", then_move)
        backend.delete_allocations(consumer)
    finally:
        other.close()
    assert moved
    assert [backend.get_provider_allocations(p) for p in (a, b)] == [{}, {}]
    assert [backend.get_provider_usages(p) for p in (a, b)] == [{"VCPU": 0}, {"VCPU": 0}]
    assert databases.usage_drift(database_url) == []


def test_two_writes_emptying_a_consumer_without_record_release_it_once(
        backend, database_url, tmp_path, monkeypatch):
    """Allocation rows with no consumer row (no consumer generation to
    compare): the general write that read them before the other emptied
    them is retried instead of releasing them a second time. (PostgreSQL's
    one-statement write reads and writes in one snapshot, under locks.)"""
    monkeypatch.setattr(pg_write, "try_write", lambda conn, writes: False)
    (a,) = _providers(backend, "a")
    consumer = str(uuid.uuid4())
    with backend.engine.begin() as conn:
        pid = conn.execute(sa.select(m.resource_providers.c.id)
                           .where(m.resource_providers.c.uuid == a)).scalar_one()
        conn.execute(sa.insert(m.allocations).values(
            resource_provider_id=pid, consumer_id=consumer, resource_class="VCPU", used=2))
        conn.execute(sa.update(m.inventories).where(m.inventories.c.resource_provider_id == pid)
                     .values(used=2))
    other = SQLBackend(make_conf(database_url, str(tmp_path)))
    read_providers = alloc._read_providers
    emptied = []

    def then_empty(conn, uuids, ids):
        if not emptied:
            emptied.append(True)
            _write(other, consumer, {}, None)
        return read_providers(conn, uuids, ids)

    try:
        monkeypatch.setattr(alloc, "_read_providers", then_empty)
        _write(backend, consumer, {}, None)
    finally:
        other.close()
    assert emptied
    assert backend.get_provider_allocations(a) == {}
    assert backend.get_provider_usages(a) == {"VCPU": 0}
    assert databases.usage_drift(database_url) == []


def test_a_delete_racing_two_moves_leaves_nothing_of_the_consumer(
        backend, database_url, tmp_path, monkeypatch):
    """A -> B commits after the delete's first read, and B -> C is written
    but not yet committed when the delete takes its locks: the delete
    waits for it and ends with nothing of the consumer anywhere (on
    PostgreSQL its locked read cannot see the row B -> C inserted; the
    delete is retried instead of leaving that row behind)."""
    a, b, c = _providers(backend, "a", "b", "c")
    consumer = str(uuid.uuid4())
    _write(backend, consumer, {a: {"VCPU": 2}}, None)
    other = SQLBackend(make_conf(database_url, str(tmp_path)))
    provider_select = alloc.queries.provider_select
    in_flight = threading.Event()
    second: list[BaseException] = []

    def move_on_and_commit_later():
        try:
            generation = other.get_consumer_allocations(consumer).generation
            with other.engine.connect() as conn, conn.begin():
                alloc.write_once(conn, [t.AllocationWrite(
                    consumer_uuid=consumer, consumer_generation=generation, project_id="p",
                    user_id="u", allocations={c: {"VCPU": 2}})])
                in_flight.set()
                time.sleep(1.0)
        except BaseException as exc:  # reported by the test below
            second.append(exc)
            in_flight.set()

    mover = threading.Thread(target=move_on_and_commit_later)

    def then_move_twice():
        if not mover.is_alive() and not in_flight.is_set():
            _write(other, consumer, {b: {"VCPU": 2}},
                   other.get_consumer_allocations(consumer).generation)
            mover.start()
            in_flight.wait()
        return provider_select()

    try:
        monkeypatch.setattr(alloc.queries, "provider_select", then_move_twice)
        backend.delete_allocations(consumer)
        mover.join()
    finally:
        other.close()
    assert second == []
    assert [backend.get_provider_allocations(p) for p in (a, b, c)] == [{}, {}, {}]
    assert databases.usage_drift(database_url) == []
