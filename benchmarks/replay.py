"""A search's statements alone: what one call sent to the database,
replayed on a DBAPI connection with nothing of rtframework around it.

The candidates benchmark records the statements of one sql search (as the
driver received them, parameters included), then times replaying them:
each executed and its rows fetched as the driver returns them. What the
replay takes is the database's part of the search plus the driver's (the
round trips, the server's work, turning rows into tuples: with PyMySQL,
Python too); the rest of the search's time is rtframework's own. A target
below the replay's time cannot be met by rtframework's code on that
driver: it needs other statements.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Sequence
from typing import NamedTuple

import sqlalchemy as sa


class Statement(NamedTuple):
    """One statement as the DBAPI cursor got it."""

    text: str
    parameters: object


class Replayed(NamedTuple):
    """One replay: its wall time, the statements run and the rows fetched."""

    ms: float
    statements: int
    rows: int


@contextlib.contextmanager
def recording(engine: sa.Engine) -> Iterator[list[Statement]]:
    """The statements ``engine``'s connections execute inside the block."""
    seen: list[Statement] = []

    def record(_conn, _cursor, statement, parameters, _context, executemany) -> None:
        if executemany:  # pragma: no cover - searches run single statements
            raise ValueError("a search ran an executemany; it cannot be replayed")
        seen.append(Statement(statement, parameters))

    sa.event.listen(engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        sa.event.remove(engine, "before_cursor_execute", record)


def replay(engine: sa.Engine, statements: Sequence[Statement]) -> Replayed:
    """Run ``statements`` in order on one pooled DBAPI connection, fetching
    every row. On PostgreSQL in autocommit mode, as the sql backend reads
    there (no BEGIN or COMMIT); elsewhere in the driver's transaction,
    committed at the end, as its reads are (SQLite's BEGIN is among the
    recorded statements). A failed statement's transaction is rolled back
    when the pool takes the connection back."""
    pooled = engine.raw_connection()
    try:
        conn = pooled.driver_connection
        postgresql = engine.dialect.name == "postgresql"
        if postgresql:
            conn.autocommit = True
        try:
            began = time.perf_counter()
            run = rows = 0
            with contextlib.closing(conn.cursor()) as cursor:
                for statement in statements:
                    cursor.execute(statement.text, statement.parameters)
                    run += 1
                    if cursor.description is not None:
                        rows += len(cursor.fetchall())
                conn.commit()
                elapsed = (time.perf_counter() - began) * 1000
        finally:
            if postgresql and not conn.closed:
                conn.autocommit = False
    finally:
        pooled.close()
    return Replayed(elapsed, run, rows)
