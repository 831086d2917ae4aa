"""What every compute record table's code shares: the engine, rows in and
out, compare-and-swap, upsert, and the filters of its list methods.

:class:`Records` is the base of the per-table classes (``instances``,
``migration_records``, ``nodes``, ``services``, ``audit_findings``,
``allocation_history``) that :class:`rtframework.compute.store.ComputeStore`
combines; every session on the compute database is opened through it.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any, TypeVar

import sqlalchemy as sa

from rtframework import db
from rtframework.compute import errors

# "No expectation" for compare-and-swap arguments (None is a real value).
ANY: Any = object()

R = TypeVar("R")


def utcnow() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


def to_db(moment: datetime.datetime) -> datetime.datetime:
    """Naive UTC: the one form every engine stores and compares alike."""
    if moment.tzinfo is not None:
        moment = moment.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    return moment


def now() -> datetime.datetime:
    """The time now, as stored."""
    return to_db(utcnow())


def from_db(moment: datetime.datetime) -> datetime.datetime:
    return moment.replace(tzinfo=datetime.timezone.utc) if moment.tzinfo is None else moment


def value(cls: type[R], row: Mapping[str, Any], **computed: Any) -> R:
    """A record value (dataclass ``cls``) of a row: each field from the column
    of its name (timestamps as aware UTC; a column the row lacks leaves the
    field's default), but those given in ``computed``."""
    fields = {}
    for field in dataclasses.fields(cls):
        if field.name in computed:
            fields[field.name] = computed[field.name]
        elif field.name in row:
            data = row[field.name]
            fields[field.name] = from_db(data) if isinstance(data, datetime.datetime) else data
    return cls(**fields)


def check_choice(what: str, value: str | None, choices: Collection[str]) -> None:
    if value is not None and value not in choices:
        raise errors.InvalidValue(f"{what} {value!r} is not one of {', '.join(choices)}")


def check_fields(what: str, fields: Iterable[str], known: Collection[str]) -> None:
    unknown = set(fields) - set(known)
    if unknown:
        raise errors.InvalidValue(f"{what} has no field(s) {', '.join(sorted(unknown))}")


def filtered(
    query: sa.Select,
    equal: Mapping[sa.Column, Any] = {},  # noqa: B006 - read only
    among: Mapping[sa.Column, Iterable[Any] | None] = {},  # noqa: B006 - read only
) -> sa.Select:
    """``query`` restricted to the given values; None means "any"."""
    for column, wanted in equal.items():
        if wanted is not None:
            query = query.where(column == wanted)
    for column, values in among.items():
        if values is not None:
            query = query.where(column.in_(list(values)))
    return query


def _matches(column: sa.ColumnElement, expected: Any) -> sa.ColumnElement[bool]:
    """``column`` equals ``expected``, or is one of a collection of values
    (None allowed in both)."""
    if isinstance(expected, (set, frozenset, tuple, list)):
        wanted = [e for e in expected if e is not None]
        clauses = [column.in_(wanted)] if wanted else []
        if None in expected:
            clauses.append(column.is_(None))
        return sa.or_(*clauses) if clauses else sa.false()
    return column.is_(None) if expected is None else column == expected


def upsert(
    conn: sa.Connection,
    table: sa.Table,
    key: Mapping[str, Any],
    values: Mapping[str, Any],
    insert_only: Mapping[str, Any],
) -> None:
    """Update the row with ``key`` or insert it; portable across engines."""
    where = [table.c[k] == val for k, val in key.items()]
    if conn.execute(table.update().where(*where).values(**values)).rowcount:
        return
    try:
        with conn.begin_nested():
            conn.execute(table.insert().values(**key, **values, **insert_only))
    except sa.exc.IntegrityError:
        # Another writer inserted it between our UPDATE and INSERT.
        conn.execute(table.update().where(*where).values(**values))


class Records:
    """The compute records over one SQLAlchemy engine."""

    def __init__(self, engine: sa.Engine) -> None:
        self.engine = engine

    def _one(self, key: sa.Column, value: str, not_found: type[errors.NotFound],
             message: str) -> Mapping[str, Any]:
        """The row of ``key.table`` whose ``key`` is ``value``."""
        with db.read(self.engine) as conn:
            row = conn.execute(sa.select(key.table).where(key == value)).mappings().first()
        if row is None:
            raise not_found(message)
        return row

    def _all(self, query: sa.Select, record: Callable[[Mapping[str, Any]], R]) -> list[R]:
        """Every row ``query`` reads, as records."""
        with db.read(self.engine) as conn:
            return [record(r) for r in conn.execute(query).mappings()]

    def _insert(self, table: sa.Table, row: Mapping[str, Any]) -> None:
        with db.transaction(self.engine) as conn:
            conn.execute(table.insert().values(**row))

    def _compare_and_swap(
        self,
        table: sa.Table,
        uuid: str,
        expected: Mapping[str, Any],
        values: Mapping[str, Any],
        what: str,
        not_found: type[errors.NotFound],
    ) -> Mapping[str, Any]:
        """UPDATE one row if it still holds ``expected`` (each a value or a
        collection of values; ANY: not checked); the new row. StateConflict
        otherwise, naming what it found."""
        values = {**values, "updated_at": now()}
        conditions = [table.c.uuid == uuid]
        conditions += [_matches(table.c[k], e) for k, e in expected.items() if e is not ANY]
        with db.transaction(self.engine) as conn:
            result = conn.execute(table.update().where(*conditions).values(**values))
            row = conn.execute(sa.select(table).where(table.c.uuid == uuid)).mappings().first()
        if row is None:
            raise not_found(f"{what} {uuid} not found")
        if result.rowcount == 0:
            found = ", ".join(f"{k} expected {e!r} but is {row[k]!r}"
                              for k, e in expected.items() if e is not ANY)
            raise errors.StateConflict(f"{what} {uuid} changed meanwhile: {found}")
        return row
