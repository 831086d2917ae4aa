"""A search's statements alone: what one call sent to the database,
replayed on a DBAPI connection with nothing of rtframework around it.

The candidates benchmark records the statements of one sql search (as the
driver received them, parameters included), then times replaying them:
each executed and its rows fetched as the driver returns them. What the
replay takes is the database's part of the search plus the driver's (the
round trips, the server's work, turning rows into tuples); the rest of the
search's time is rtframework's own Python. A target below the replay's
time cannot be met by client code: it needs other statements.
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


def replay(engine: sa.Engine, statements: Sequence[Statement]) -> tuple[float, int]:
    """Run ``statements`` in order on one pooled DBAPI connection, fetching
    every row; wall ms and the rows fetched. On PostgreSQL in autocommit
    mode, as the sql backend reads there (no BEGIN or COMMIT); elsewhere in
    the driver's transaction, committed at the end, as its reads are."""
    pooled = engine.raw_connection()
    try:
        conn = pooled.driver_connection
        postgresql = engine.dialect.name == "postgresql"
        if postgresql:
            conn.autocommit = True
        try:
            began = time.perf_counter()
            rows = 0
            cursor = conn.cursor()
            for statement in statements:
                cursor.execute(statement.text, statement.parameters)
                if cursor.description is not None:
                    rows += len(cursor.fetchall())
            conn.commit()
            elapsed = (time.perf_counter() - began) * 1000
            cursor.close()
        finally:
            if postgresql:
                conn.autocommit = False
    finally:
        pooled.close()
    return elapsed, rows
