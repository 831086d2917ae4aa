"""The sql backend retries a call the database aborted, once per call."""

from __future__ import annotations

import uuid

import pymysql
import pytest
import sqlalchemy as sa

from rtframework.placement import errors
from rtframework.placement import types as t
from rtframework.placement.sql import allocations as alloc
from rtframework.placement.sql.write_plan import ProviderRaced


@pytest.fixture
def provider(backend):
    rp = backend.create_provider(f"retry-{uuid.uuid4().hex}")
    backend.set_inventories(rp.uuid, 0, {"VCPU": t.Inventory(total=8)})
    return rp.uuid


def _aborting(monkeypatch, times: int, exc: Exception) -> list[int]:
    real = alloc.write
    calls: list[int] = []

    def write(engine, writes, statement_engine):
        calls.append(1)
        if len(calls) <= times:
            raise exc
        return real(engine, writes, statement_engine)

    monkeypatch.setattr(alloc, "write", write)
    monkeypatch.setattr("time.sleep", lambda _s: None)
    return calls


def _claim(backend, provider, consumer):
    backend.put_allocations(consumer, {provider: {"VCPU": 2}}, project_id="p", user_id="u",
                            consumer_generation=None)


def test_a_galera_certification_failure_is_retried_and_the_write_lands(
        backend, provider, monkeypatch):
    deadlock = sa.exc.OperationalError("COMMIT", {}, pymysql.err.OperationalError(
        1213, "Deadlock found when trying to get lock; try restarting transaction"))
    calls = _aborting(monkeypatch, 3, deadlock)
    consumer = str(uuid.uuid4())
    _claim(backend, provider, consumer)
    assert len(calls) == 4
    assert backend.get_provider_allocations(provider) == {consumer: {"VCPU": 2}}


def test_a_provider_race_that_never_ends_raises_retries_exhausted(
        backend, provider, monkeypatch):
    calls = _aborting(monkeypatch, 10_000, ProviderRaced("generation moved"))
    consumer = str(uuid.uuid4())
    with pytest.raises(errors.RetriesExhausted) as caught:
        _claim(backend, provider, consumer)
    assert len(calls) == backend.backoff.retries + 1
    assert f"allocation write of consumer(s) {consumer}: still failing after" in str(caught.value)
    assert backend.get_provider_allocations(provider) == {}


def test_a_real_error_is_not_retried(backend, provider, monkeypatch):
    duplicate = sa.exc.OperationalError("INSERT", {}, pymysql.err.OperationalError(
        1146, "Table 'allocations' doesn't exist"))
    calls = _aborting(monkeypatch, 1, duplicate)
    with pytest.raises(errors.BackendUnavailable):
        _claim(backend, provider, str(uuid.uuid4()))
    assert len(calls) == 1
