"""A search that reads the aggregates of more providers than SQLite binds
in one statement (SQLITE_MAX_VARIABLE_NUMBER: 999 before SQLite 3.32, and
what a build chose): the search answers as with a higher limit."""

from __future__ import annotations

import sqlite3
import uuid

import pytest
import sqlalchemy as sa

from rtframework.placement import types as t
from rtframework.placement.sql import candidates

AGGREGATE = str(uuid.uuid4())
PROVIDERS = 60
# Above what the search statement binds, below the providers whose
# memberships are read.
LIMIT = 30

pytestmark = [
    pytest.mark.sqlite_only,
    pytest.mark.skipif(not hasattr(sqlite3.Connection, "setlimit"),
                       reason="sqlite3's setlimit came with Python 3.11"),
]


def _cloud(backend) -> None:
    for n in range(PROVIDERS):
        provider = backend.create_provider(f"host-{n}")
        generation = backend.set_inventories(provider.uuid, provider.generation,
                                             {"VCPU": t.Inventory(total=4)})
        backend.set_provider_aggregates(provider.uuid, generation, frozenset({AGGREGATE}))


@pytest.mark.parametrize("limit", [None, 45])
def test_member_of_across_more_providers_than_one_statement_may_bind(sql_backend, monkeypatch,
                                                                     limit):
    if sql_backend.engine.dialect.name != "sqlite":
        pytest.skip("SQLite's limit of bound parameters")
    _cloud(sql_backend)
    query = t.CandidateQuery(resources={"VCPU": 1}, member_of=(frozenset({AGGREGATE}),),
                             limit=limit)
    expected = sql_backend.get_allocation_candidates(query)
    assert len(expected.allocation_requests) == (limit or PROVIDERS)

    @sa.event.listens_for(sql_backend.engine, "connect")
    def _few_variables(dbapi_conn, _record):
        dbapi_conn.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, LIMIT)

    sql_backend.engine.dispose()  # new connections, with the low limit
    monkeypatch.setattr(candidates, "_SQLITE_IDS_PER_STATEMENT", LIMIT)
    assert sql_backend.get_allocation_candidates(query) == expected
