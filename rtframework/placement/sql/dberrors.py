"""Turning driver exceptions into placement errors."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import sqlalchemy as sa

from rtframework.placement import errors

# MySQL/MariaDB: deadlock, lock wait timeout. PostgreSQL: serialization
# failure, deadlock detected. Both mean "the other writer won; try again".
_MYSQL_RETRY = {1213, 1205}
_PG_RETRY = {"40001", "40P01"}


def is_transient(exc: BaseException) -> bool:
    """A lost lock race the database resolved by aborting us."""
    if not isinstance(exc, sa.exc.DBAPIError):
        return False
    orig = exc.orig
    pgcode = getattr(orig, "pgcode", None)
    if pgcode in _PG_RETRY:
        return True
    args = getattr(orig, "args", ())
    if args and isinstance(args[0], int) and args[0] in _MYSQL_RETRY:
        return True
    # SQLite: the busy timeout ran out while another writer held the lock.
    return "database is locked" in str(orig)


@contextlib.contextmanager
def translated() -> Iterator[None]:
    """Database unreachable or broken -> BackendUnavailable."""
    try:
        yield
    except errors.PlacementError:
        raise
    except (sa.exc.OperationalError, sa.exc.InterfaceError) as exc:
        raise errors.BackendUnavailable(f"placement database error: {exc.orig}") from exc
