"""Turning driver exceptions into placement errors."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import sqlalchemy as sa

from rtframework import mysql_engine
from rtframework.placement import errors

# Lost races: the database aborted us so that another writer could win.
# MySQL/MariaDB 1213 deadlock (also how Galera reports a certification
# failure at commit: another node committed a conflicting write first),
# 1205 lock wait timeout; PostgreSQL serialization failure, deadlock.
_MYSQL_RACE = {1213, 1205}
_PG_RACE = {"40001", "40P01"}
# The server went away under us or is not ready: 1047 "WSREP has not yet
# prepared node for application use" (a Galera node out of the primary
# component), 2006 gone away, 2013 lost connection, 1927 connection killed,
# 4031 disconnected; PostgreSQL admin/crash shutdown. The pool replaces the
# connection (SQLAlchemy's dialect takes these for a disconnect, and
# mysql_engine takes 1047 for one, which a ping does not see), with the
# first serving host when the URL names several.
# A refused connection is not here: an unreachable database is reported at
# once, not after every retry; so is a login or database the server refuses
# (1044, 1045, 1049; see mysql_engine).
_MYSQL_GONE = {mysql_engine.NOT_READY, 2006, 2013, 1927, 4031}
_PG_GONE = {"57P01", "57P02", "57P03"}


def is_lost_race(exc: BaseException) -> bool:
    """A lost lock race the database resolved by aborting us."""
    if not isinstance(exc, sa.exc.DBAPIError):
        return False
    orig = exc.orig
    if getattr(orig, "pgcode", None) in _PG_RACE or mysql_engine.error_code(orig) in _MYSQL_RACE:
        return True
    # SQLite: the busy timeout ran out while another writer held the lock.
    return "database is locked" in str(orig)


def is_connection_lost(exc: BaseException) -> bool:
    """The connection in use died or its node is not serving."""
    if not isinstance(exc, sa.exc.DBAPIError):
        return False
    if exc.connection_invalidated:
        return True
    orig = exc.orig
    return getattr(orig, "pgcode", None) in _PG_GONE or mysql_engine.error_code(orig) in _MYSQL_GONE


def is_transient(exc: BaseException) -> bool:
    """Worth running the same transaction again (see the two above)."""
    return is_lost_race(exc) or is_connection_lost(exc)


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
