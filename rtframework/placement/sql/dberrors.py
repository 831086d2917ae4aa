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


def reason(exc: sa.exc.SQLAlchemyError) -> str:
    """The driver's own words, first line only: no SQL, no parameters."""
    orig = getattr(exc, "orig", None)
    text = str(orig if orig is not None else exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


@contextlib.contextmanager
def translated() -> Iterator[None]:
    """Every database error leaves as a typed placement error.

    Unreachable or broken database -> BackendUnavailable; a value the
    column refuses -> InvalidRequest; a constraint -> Conflict; anything
    else the driver raises -> PlacementError. The SQLAlchemy exception
    stays the ``__cause__`` (for ``--debug`` and retry decisions).
    """
    try:
        yield
    except errors.PlacementError:
        raise
    except (sa.exc.OperationalError, sa.exc.InterfaceError) as exc:
        raise errors.BackendUnavailable(f"placement database error: {reason(exc)}") from exc
    except sa.exc.DataError as exc:
        raise errors.InvalidRequest(
            f"placement database refused a value: {reason(exc)}") from exc
    except sa.exc.IntegrityError as exc:
        raise errors.Conflict(f"placement database constraint: {reason(exc)}") from exc
    except sa.exc.SQLAlchemyError as exc:
        raise errors.PlacementError(f"placement database error: {reason(exc)}") from exc
