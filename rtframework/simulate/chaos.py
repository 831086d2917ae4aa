"""Fault injection for soaks; none of it is ever installed on a product path.

* :func:`install_db_faults`: a SQLAlchemy event hook that makes a statement
  fail like a dropped connection (OperationalError) now and then, and
  throws the pooled connections away (``engine.dispose()``) now and then;
* :func:`bump_generation`: a concurrent writer that rewrites a consumer's
  allocations unchanged, or a provider's traits unchanged, with the
  generation it read, so every other writer of it loses the race and has
  to re-read;
* :class:`ConflictCounter`: a backend proxy that counts the generation
  conflicts every caller met (each one is a retry).
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Sequence
from typing import Any

import sqlalchemy as sa

from rtframework.placement import errors as perrors
from rtframework.placement import types as t
from rtframework.placement.backend import PlacementBackend
from rtframework.proxy import CallProxy


class InjectedDisconnect(ConnectionError):
    """The DBAPI-level cause of an injected OperationalError."""


def install_db_faults(engine: sa.Engine, rate: float, rng: random.Random,
                      enabled: Callable[[], bool] = lambda: True) -> None:
    """Fail about ``rate`` of the statements (and dispose of the pool about
    as often) while ``enabled()`` says so."""
    lock = threading.Lock()

    def before_cursor_execute(conn, cursor, statement, parameters, context, executemany):
        if not enabled():
            return
        with lock:
            roll = rng.random()
        if roll < rate / 2:
            raise sa.exc.OperationalError(statement, parameters,
                                          InjectedDisconnect("injected database disconnect"))
        if roll < rate:
            # Checked-in connections close; checked-out ones go on until returned.
            engine.dispose()

    sa.event.listen(engine, "before_cursor_execute", before_cursor_execute)


def relax_durability(engine: sa.Engine) -> None:
    """No waiting for the disk at every commit on a soak's throw-away
    database: SQLite ``synchronous=NORMAL`` (WAL keeps it consistent),
    PostgreSQL ``synchronous_commit=off`` (a crash of the server may lose
    the last commits, never consistency). Only durability across a power
    cut is lost; without it the soak mostly measures fsync."""
    name = engine.dialect.name
    if name == "sqlite":
        statement = "PRAGMA synchronous=NORMAL"
    elif name == "postgresql":
        statement = "SET synchronous_commit TO OFF"
    else:
        return
    engine.dispose()

    @sa.event.listens_for(engine, "connect")
    def _relaxed(dbapi_conn, _record):
        cursor = dbapi_conn.cursor()
        cursor.execute(statement)
        cursor.close()
        if name == "postgresql":
            dbapi_conn.commit()


def bump_generation(backend: PlacementBackend, rng: random.Random, consumers: Sequence[str],
                    providers: Sequence[str]) -> bool:
    """One concurrent no-op write; True if it won its own race."""
    try:
        if consumers and (not providers or rng.random() < 0.6):
            held = backend.get_consumer_allocations(rng.choice(consumers))
            if not held.allocations or held.generation is None:
                return False
            backend.write_allocations([t.AllocationWrite(
                consumer_uuid=held.consumer_uuid, allocations=held.allocations,
                project_id=held.project_id or "", user_id=held.user_id or "",
                consumer_generation=held.generation,
                consumer_type=held.consumer_type or "INSTANCE")])
            return True
        if providers:
            provider = rng.choice(providers)
            traits = backend.get_provider_traits(provider)
            backend.set_provider_traits(provider, traits.generation, traits.traits)
            return True
    except perrors.PlacementError:
        return False  # lost to a real writer, or the consumer went away: fine
    return False


class ConflictCounter(CallProxy):
    """Forwards to ``backend``; ``on_conflict()`` is called for every
    GenerationConflict a call raises."""

    def __init__(self, backend: PlacementBackend, on_conflict: Callable[[], None]) -> None:
        super().__init__(backend)
        self._on_conflict = on_conflict

    def _around(self, name: str, call: Callable[[], Any]) -> Any:
        try:
            return call()
        except perrors.GenerationConflict:
            self._on_conflict()
            raise
