"""benchmarks/replay.py: a search's statements recorded and run again on a
DBAPI connection, on every engine. No timing is asserted."""

from __future__ import annotations

import pytest

from benchmarks import candidates, environment, replay, seed
from rtframework.placement import types as t

QUERY = t.CandidateQuery(resources=candidates.REQUEST)


@pytest.fixture
def backend(database_url, tmp_path):
    backend = environment.sql_backend(str(tmp_path), database_url)
    seed.seed_sql(database_url, 0, 12)
    yield backend
    backend.close()


def test_the_replay_runs_what_the_search_ran_against_the_data_as_it_is_now(
        backend, database_url):
    with replay.recording(backend.engine) as statements:
        found = backend.get_allocation_candidates(QUERY)
    assert found.allocation_requests
    assert any("inventories" in s.text for s in statements)

    replayed = replay.replay(backend.engine, statements)
    assert replayed.statements == len(statements)
    # The search reads a row per class of every provider it returns.
    assert replayed.rows >= len(QUERY.resources) * len(found.allocation_requests)

    seed.seed_sql(database_url, 12, 20)  # more providers that match
    more = backend.get_allocation_candidates(QUERY)
    assert len(more.allocation_requests) > len(found.allocation_requests)
    again = replay.replay(backend.engine, statements)
    assert again.rows - replayed.rows == len(QUERY.resources) * (
        len(more.allocation_requests) - len(found.allocation_requests))


def test_only_the_block_is_recorded_and_the_connection_goes_back_as_it_came(backend):
    with replay.recording(backend.engine) as statements:
        backend.get_allocation_candidates(QUERY)
    recorded = list(statements)
    backend.get_allocation_candidates(QUERY)
    assert statements == recorded

    replay.replay(backend.engine, statements)
    if backend.engine.dialect.name == "postgresql":
        # The pool hands the last connection back first: the same one.
        pooled = backend.engine.raw_connection()
        try:
            assert pooled.driver_connection.autocommit is False
        finally:
            pooled.close()
    provider = backend.create_provider("after-replay")
    assert backend.get_provider(provider.uuid).name == "after-replay"
