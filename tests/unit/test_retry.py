"""The one retry layer: backoff with jitter, bounds, a typed error, no nesting."""

from __future__ import annotations

import pymysql
import pytest
import sqlalchemy as sa

from rtframework import retry
from rtframework.placement import errors
from rtframework.placement.sql import dberrors


@pytest.fixture
def waits(monkeypatch):
    """The seconds each retry slept (nothing really sleeps)."""
    slept: list[float] = []
    monkeypatch.setattr("time.sleep", slept.append)
    return slept


def failing(times: int, exc: Exception):
    calls = []

    def attempt():
        calls.append(1)
        if len(calls) <= times:
            raise exc
        return "done"

    return attempt, calls


def test_a_conflict_is_retried_until_it_wins_and_counted(waits):
    attempt, calls = failing(3, errors.ConsumerGenerationConflict("gen moved"))
    conflicts = []
    assert retry.on_conflict(attempt, 10, "claim", lambda: conflicts.append(1)) == "done"
    assert len(calls) == 4 and len(conflicts) == 3 and len(waits) == 3


def test_waits_grow_exponentially_with_jitter_under_a_cap(waits):
    backoff = retry.Backoff(retries=12, first=0.01, cap=0.2)
    for _ in range(2):
        attempt, _calls = failing(12, errors.ProviderGenerationConflict("raced"))
        retry.on_conflict(attempt, backoff, "claim")
    first_run, second_run = waits[:12], waits[12:]
    for run in (first_run, second_run):
        assert all(0 <= w <= min(0.2, 0.01 * 2 ** n) for n, w in enumerate(run))
    # Random, so two writers that collided do not collide again at once.
    assert first_run != second_run
    assert max(waits) > 0.01


def test_running_out_raises_a_typed_error_naming_what_and_how_often(waits):
    attempt, calls = failing(100, errors.ConsumerGenerationConflict("gen moved"))
    with pytest.raises(errors.RetriesExhausted) as caught:
        retry.on_conflict(attempt, 2, "heal consumer c1")
    assert len(calls) == 3
    assert str(caught.value).startswith("heal consumer c1: still failing after 3 attempt(s)")
    assert "gen moved" in str(caught.value)
    assert isinstance(caught.value, errors.GenerationConflict)


def test_total_time_is_bounded(monkeypatch):
    clock = iter(range(0, 10_000, 7))  # every reading of the clock is 7 s later
    monkeypatch.setattr("time.monotonic", lambda: float(next(clock)))
    monkeypatch.setattr("time.sleep", lambda _s: None)
    attempt, calls = failing(1000, errors.ProviderGenerationConflict("raced"))
    with pytest.raises(errors.RetriesExhausted):
        retry.on_conflict(attempt, retry.Backoff(retries=1000, max_seconds=30), "claim")
    assert len(calls) < 10


def test_a_first_attempt_that_took_the_whole_budget_is_not_retried(monkeypatch, waits):
    now = [0.0]
    monkeypatch.setattr("time.monotonic", lambda: now[0])
    calls = []

    def slow_attempt():
        calls.append(1)
        now[0] += 31  # e.g. a connection timeout
        raise errors.ProviderGenerationConflict("raced")

    with pytest.raises(errors.RetriesExhausted) as caught:
        retry.on_conflict(slow_attempt, retry.Backoff(retries=10, max_seconds=30), "claim")
    assert len(calls) == 1 and waits == []
    assert "still failing after 1 attempt(s) over 31.0 s" in str(caught.value)


def test_an_exhausted_inner_layer_is_not_retried_by_an_outer_one(waits):
    """(n+1)^2 attempts before: the outer loop re-ran the inner one."""
    inner, calls = failing(1000, errors.ProviderGenerationConflict("raced"))
    with pytest.raises(errors.RetriesExhausted):
        retry.on_conflict(lambda: retry.on_conflict(inner, 3, "write"), 3, "move")
    assert len(calls) == 4


def test_an_error_that_is_not_a_race_passes_at_once(waits):
    attempt, calls = failing(1, errors.CapacityExceeded("full"))
    with pytest.raises(errors.CapacityExceeded):
        retry.on_conflict(attempt, 10, "claim")
    assert len(calls) == 1 and waits == []


def test_an_unreachable_database_stays_backend_unavailable(waits):
    attempt, calls = failing(100, errors.BackendUnavailable("node gone"))
    with pytest.raises(errors.BackendUnavailable) as caught:
        retry.call(attempt, retry.Backoff(retries=2), "get_provider('p')", lambda _e: True,
                   lambda e: isinstance(e, errors.BackendUnavailable))
    assert not isinstance(caught.value, errors.RetriesExhausted)
    assert "get_provider('p'): still failing after 3 attempt(s)" in str(caught.value)


def _mysql_error(code: int, message: str) -> sa.exc.OperationalError:
    return sa.exc.OperationalError("COMMIT", {}, pymysql.err.OperationalError(code, message))


@pytest.mark.parametrize(("code", "transient"), [
    (1213, True),   # deadlock, and a Galera certification failure at commit
    (1205, True),   # lock wait timeout
    (1047, True),   # WSREP has not yet prepared node for application use
    (2013, True),   # lost connection (a Galera node killed under us)
    (2006, True),   # server has gone away
    (2003, False),  # cannot connect at all: reported at once
    (1062, False),  # duplicate key: a real answer
    (1146, False),  # no such table
])
def test_which_mysql_and_galera_errors_are_transient(code, transient):
    assert dberrors.is_transient(_mysql_error(code, "x")) is transient


def test_a_lost_race_the_database_reported_ends_as_retries_exhausted(waits):
    attempt, calls = failing(100, errors.BackendUnavailable("(1213, 'Deadlock found')"))
    with pytest.raises(errors.RetriesExhausted):
        retry.call(attempt, retry.Backoff(retries=2), "write", lambda _e: True,
                   lambda _e: False)
    assert len(calls) == 3
