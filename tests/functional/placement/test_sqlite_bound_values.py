"""Reads of more ids than SQLite binds in one statement
(SQLITE_MAX_VARIABLE_NUMBER: 999 before SQLite 3.32, and what a build
chose): a search reading its providers' aggregates, and the allocations
of many consumers, answer as with a higher limit."""

from __future__ import annotations

import sqlite3
import uuid

import pytest
import sqlalchemy as sa

from rtframework.placement import types as t
from rtframework.placement.sql import queries

AGGREGATE = str(uuid.uuid4())
TREES = 30
# Above what the search statement binds, below the providers (two per
# tree) whose memberships are read.
LIMIT = 25

pytestmark = [
    pytest.mark.sqlite_only,
    pytest.mark.skipif(not hasattr(sqlite3.Connection, "setlimit"),
                       reason="sqlite3's setlimit came with Python 3.11"),
]


def _cloud(backend) -> None:
    """Trees of a root in the aggregate and a child serving VCPU: the
    child is covered through its root, which the search checks in Python
    with the memberships it read, so each tree needs its root's."""
    for n in range(TREES):
        root = backend.create_provider(f"host-{n}")
        backend.set_provider_aggregates(root.uuid, root.generation, frozenset({AGGREGATE}))
        child = backend.create_provider(f"host-{n}-numa", parent_uuid=root.uuid)
        backend.set_inventories(child.uuid, child.generation, {"VCPU": t.Inventory(total=4)})


def _few_variables(backend) -> None:
    """New connections of ``backend`` bind at most LIMIT values."""
    @sa.event.listens_for(backend.engine, "connect")
    def _limit(dbapi_conn, _record):
        dbapi_conn.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, LIMIT)

    backend.engine.dispose()


@pytest.fixture
def sql_backend(sql_backend):
    if sql_backend.engine.dialect.name != "sqlite":
        pytest.skip("SQLite's limit of bound parameters")
    return sql_backend


@pytest.mark.parametrize("limit", [None, 28])
def test_member_of_across_more_providers_than_one_statement_may_bind(sql_backend, monkeypatch,
                                                                     limit):
    _cloud(sql_backend)
    query = t.CandidateQuery(resources={"VCPU": 1}, member_of=(frozenset({AGGREGATE}),),
                             limit=limit)
    expected = sql_backend.get_allocation_candidates(query)
    assert len(expected.allocation_requests) == (limit or TREES)

    _few_variables(sql_backend)
    monkeypatch.setattr(queries, "SQLITE_BOUND_VALUES", LIMIT)
    assert sql_backend.get_allocation_candidates(query) == expected


def test_allocations_of_more_consumers_than_one_statement_may_bind(sql_backend, monkeypatch):
    provider = sql_backend.create_provider("host")
    sql_backend.set_inventories(provider.uuid, provider.generation,
                                {"VCPU": t.Inventory(total=100)})
    consumers = [str(uuid.uuid4()) for _ in range(LIMIT + 5)]
    for consumer in consumers:
        sql_backend.put_allocations(consumer, {provider.uuid: {"VCPU": 1}},
                                    project_id="p", user_id="u", consumer_generation=None)
    asked = [*consumers, str(uuid.uuid4())]  # and one that holds nothing
    expected = sql_backend.get_consumers_allocations(asked)
    assert sum(bool(a.allocations) for a in expected.values()) == len(consumers)

    _few_variables(sql_backend)
    monkeypatch.setattr(queries, "SQLITE_BOUND_VALUES", LIMIT)
    assert sql_backend.get_consumers_allocations(asked) == expected


def test_lists_of_ids_are_read_in_pieces_any_sqlite_binds():
    # 999: SQLite's default before 3.32; the tests above shrink this one
    # constant, which both reads take their pieces' size from.
    assert queries.SQLITE_BOUND_VALUES <= 999
