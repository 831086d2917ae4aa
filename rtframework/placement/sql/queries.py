"""Reads and small writes shared by the backend's operations.

Every function takes an open Connection: the caller owns the transaction.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable, Mapping
from typing import TypeVar

import sqlalchemy as sa

from rtframework.placement import errors, validation
from rtframework.placement import types as t
from rtframework.placement.sql import models as m

_rp = m.resource_providers
_parent = _rp.alias("parent")
_root = _rp.alias("root")


def provider_select() -> sa.Select:
    """Providers with their parent's and root's uuid, in creation order."""
    return (
        sa.select(
            _rp.c.id, _rp.c.uuid, _rp.c.name, _rp.c.generation,
            _parent.c.uuid.label("parent_uuid"), _root.c.uuid.label("root_uuid"),
        )
        .select_from(
            _rp.outerjoin(_parent, _rp.c.parent_provider_id == _parent.c.id)
            .outerjoin(_root, _rp.c.root_provider_id == _root.c.id)
        )
        .order_by(_rp.c.id)
    )


def to_provider(row) -> t.ResourceProvider:
    return t.ResourceProvider(
        uuid=row.uuid, name=row.name, generation=row.generation,
        parent_uuid=row.parent_uuid, root_uuid=row.root_uuid,
    )


def label(row) -> str:
    """How errors and logs name a provider: uuid and name."""
    return f"{row.uuid} ({row.name})"


def log_allocation_change(log: logging.Logger, w: t.AllocationWrite,
                          before_all: Mapping[str, Mapping[str, int]],
                          labels: Mapping[str, str]) -> None:
    """Log, per provider, what ``w`` changes from ``before_all`` (what the
    consumer held, by provider uuid); ``labels`` names the providers."""
    for provider in sorted(set(before_all) | set(w.allocations)):
        before = dict(before_all.get(provider, {}))
        after = dict(w.allocations.get(provider, {}))
        if before == after:
            continue
        reason = "claimed" if not before else "released" if not after else "changed"
        log.info(
            "allocation %s: consumer %s on provider %s: %s -> %s (consumer generation %s)",
            reason, w.consumer_uuid, labels[provider], before or "{}",
            after or "{}", w.consumer_generation,
        )


def provider_row(conn: sa.Connection, uuid: str):
    """The provider row (id, uuid, name, generation, parent/root uuid)."""
    row = conn.execute(provider_select().where(_rp.c.uuid == uuid)).first()
    if row is None:
        raise errors.ProviderNotFound(f"resource provider {uuid} not found")
    return row


def _generation_conflict(row, expected: int, current: int | None):
    return errors.ProviderGenerationConflict(
        f"resource provider generation conflict on {label(row)}: "
        f"given {expected}, current {current}"
    )


def bump_generation(conn: sa.Connection, row, expected: int) -> int:
    """Compare-and-swap the provider generation; the new generation.

    The UPDATE takes the row lock, so a concurrent writer that read the same
    generation blocks here, then finds the generation moved and fails.
    """
    result = conn.execute(
        sa.update(_rp)
        .where(_rp.c.id == row.id, _rp.c.generation == expected)
        .values(generation=expected + 1)
    )
    if result.rowcount != 1:
        current = conn.execute(
            sa.select(_rp.c.generation).where(_rp.c.id == row.id)
        ).scalar_one_or_none()
        raise _generation_conflict(row, expected, current)
    return expected + 1


def keep_generation(row, expected: int) -> int:
    """The generation of a write that changes nothing: checked as read,
    not bumped (Placement leaves it alone too)."""
    if row.generation != expected:
        raise _generation_conflict(row, expected, row.generation)
    return expected


# SQLite binds each value of an IN list as a parameter of its own and
# refuses a statement with more than SQLITE_MAX_VARIABLE_NUMBER of them:
# 999 before SQLite 3.32 (still some systems' library), 32,766 after,
# whatever a build chose. Long lists of ids are read in pieces this long.
SQLITE_BOUND_VALUES = 999


# Built once: constructing SQLAlchemy expressions costs more than running
# these small queries, and the hot paths (candidates, allocation writes)
# call them on every request.
_IDS = sa.bindparam("ids", expanding=True)
_INVENTORIES = (
    sa.select(m.inventories).where(m.inventories.c.resource_provider_id.in_(_IDS))
    .order_by(m.inventories.c.resource_class)
)
_USAGES = (
    sa.select(m.inventories.c.resource_provider_id, m.inventories.c.resource_class,
              m.inventories.c.used)
    .where(m.inventories.c.resource_provider_id.in_(_IDS), m.inventories.c.used != 0)
)
_TRAITS = (
    sa.select(m.provider_traits.c.resource_provider_id, m.provider_traits.c.trait)
    .where(m.provider_traits.c.resource_provider_id.in_(_IDS))
)


def inventories_of(
    conn: sa.Connection, provider_ids: Iterable[int]
) -> dict[int, dict[str, t.Inventory]]:
    result: dict[int, dict[str, t.Inventory]] = {}
    ids = list(provider_ids)
    if not ids:
        return result
    for row in conn.execute(_INVENTORIES, {"ids": ids}):
        result.setdefault(row.resource_provider_id, {})[row.resource_class] = to_inventory(row)
    return result


def to_inventory(row) -> t.Inventory:
    return t.Inventory(
        total=row.total, reserved=row.reserved, min_unit=row.min_unit,
        max_unit=row.max_unit, step_size=row.step_size,
        allocation_ratio=float(row.allocation_ratio),
    )


def usages_of(conn: sa.Connection, provider_ids: Iterable[int]) -> dict[tuple[int, str], int]:
    """(provider id, class) -> amount allocated, for classes with usage
    (the usage every allocation write keeps beside the inventory)."""
    ids = list(provider_ids)
    if not ids:
        return {}
    return {(pid, rc): int(used) for pid, rc, used in conn.execute(_USAGES, {"ids": ids})}


def custom_names(conn: sa.Connection, table: sa.Table, names: Iterable[str]) -> set[str]:
    """Which of ``names`` exist in a custom class/trait table."""
    names = list(names)
    if not names:
        return set()
    return set(conn.execute(sa.select(table.c.name).where(table.c.name.in_(names))).scalars())


def require_classes(conn: sa.Connection, names: Iterable[str], where: str = "") -> None:
    """ResourceClassNotFound naming those of ``names`` that are neither
    standard nor created (``where``: what named them)."""
    _require(conn, names, validation.STANDARD_CLASSES, m.resource_classes,
             errors.ResourceClassNotFound, "resource class(es)", where)


def require_traits(conn: sa.Connection, names: Iterable[str], where: str = "") -> None:
    """TraitNotFound naming those of ``names`` that are neither standard
    nor created (``where``: what named them)."""
    _require(conn, names, validation.STANDARD_TRAITS, m.traits, errors.TraitNotFound,
             "trait(s)", where)


def _require(conn: sa.Connection, names: Iterable[str], standard: frozenset[str],
             table: sa.Table, error: type[errors.NotFound], what: str, where: str) -> None:
    custom = [n for n in names if n not in standard]
    missing = set(custom) - custom_names(conn, table, custom)
    if missing:
        raise error(f"{what} {', '.join(sorted(missing))} not found"
                    + (f" ({where})" if where else ""))


def check_known_names(conn: sa.Connection, classes: Iterable[str], traits: Iterable[str]) -> None:
    """Refuse a query naming a custom class or trait that does not exist,
    as Placement does, rather than answering it with nothing."""
    require_classes(conn, classes)
    require_traits(conn, traits)


def insert_ignoring_duplicates(conn: sa.Connection, table: sa.Table, rows: list[Mapping]) -> None:
    """INSERT rows, skipping those a unique key already holds.

    A plain INSERT racing another writer would fail on the unique key and,
    on PostgreSQL, abort the whole transaction; each dialect has a form that
    skips instead.
    """
    if not rows:
        return
    dialect = conn.dialect.name
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert

        stmt = insert(table).on_conflict_do_nothing()
    elif dialect == "sqlite":
        from sqlalchemy.dialects.sqlite import insert

        stmt = insert(table).on_conflict_do_nothing()
    elif dialect in ("mysql", "mariadb"):
        stmt = sa.insert(table).prefix_with("IGNORE")
    else:  # pragma: no cover - other dialects are not supported
        stmt = sa.insert(table)
    conn.execute(stmt, rows)


def traits_of(conn: sa.Connection, provider_ids: Iterable[int]) -> dict[int, frozenset[str]]:
    ids = list(provider_ids)
    found: dict[int, set[str]] = {i: set() for i in ids}
    if ids:
        for pid, trait in conn.execute(_TRAITS, {"ids": ids}):
            found[pid].add(trait)
    return {pid: frozenset(names) for pid, names in found.items()}


def aggregates_of(conn: sa.Connection, provider_id: int) -> frozenset[str]:
    pa, agg = m.provider_aggregates, m.placement_aggregates
    return frozenset(conn.execute(
        sa.select(agg.c.uuid)
        .select_from(pa.join(agg, pa.c.aggregate_id == agg.c.id))
        .where(pa.c.resource_provider_id == provider_id)
    ).scalars())


# -- filters shared by list_providers and candidates ---------------------


_Group = TypeVar("_Group", t.CandidateQuery, t.RequestGroup)


def by_aggregate_ids(conn: sa.Connection, query: t.CandidateQuery) -> t.CandidateQuery:
    """``query`` (and its groups) naming aggregates by id, as text, where it
    names them by uuid (member_of, forbidden aggregates): the rows a search
    combines in Python give a provider's aggregates that way. An unknown
    uuid names no aggregate and is left out."""
    groups = [query, *query.groups.values()]
    named = set().union(*(g.forbidden_aggregates for g in groups),
                        *(s for g in groups for s in g.member_of))
    if not named:
        return query
    agg = m.placement_aggregates
    ids = {uuid: str(id_) for uuid, id_ in conn.execute(
        sa.select(agg.c.uuid, agg.c.id).where(agg.c.uuid.in_(sorted(named))))}

    def known(uuids: frozenset[str]) -> frozenset[str]:
        return frozenset(ids[u] for u in uuids if u in ids)

    def renamed(group: _Group) -> _Group:
        return dataclasses.replace(group, member_of=tuple(known(s) for s in group.member_of),
                                   forbidden_aggregates=known(group.forbidden_aggregates))

    return dataclasses.replace(renamed(query),
                               groups={k: renamed(g) for k, g in query.groups.items()})


def member_of_clause(provider_id: sa.ColumnElement, member_of: tuple[frozenset[str], ...]):
    """``provider_id`` is in at least one aggregate of every any-of set."""
    pa, agg = m.provider_aggregates, m.placement_aggregates
    clauses = []
    for any_of in member_of:
        clauses.append(provider_id.in_(
            sa.select(pa.c.resource_provider_id)
            .select_from(pa.join(agg, pa.c.aggregate_id == agg.c.id))
            .where(agg.c.uuid.in_(sorted(any_of)))
        ))
    return clauses


def traits_clause(
    provider_id: sa.ColumnElement, required: frozenset[str], forbidden: frozenset[str]
):
    pt = m.provider_traits
    clauses = []
    if required:
        clauses.append(provider_id.in_(
            sa.select(pt.c.resource_provider_id)
            .where(pt.c.trait.in_(sorted(required)))
            .group_by(pt.c.resource_provider_id)
            .having(sa.func.count() == len(required))
        ))
    if forbidden:
        clauses.append(provider_id.not_in(
            sa.select(pt.c.resource_provider_id).where(pt.c.trait.in_(sorted(forbidden)))
        ))
    return clauses


def has_room_clause(provider_id: sa.ColumnElement, resource_class: str, amount: int):
    """The provider has inventory of the class with room for ``amount``
    (capacity, min_unit, max_unit and step_size all respected)."""
    inv = m.inventories
    return provider_id.in_(
        sa.select(inv.c.resource_provider_id).where(
            inv.c.resource_class == resource_class, *fits_clauses(inv.c.used, amount))
    )


def allocated(provider_id, resource_class) -> sa.ScalarSelect:
    """The sum of the allocations of ``resource_class`` on ``provider_id``
    (values, or columns of an enclosing statement), counted from the
    allocation rows rather than read from the stored usage."""
    a = m.allocations
    return (sa.select(sa.func.coalesce(sa.func.sum(a.c.used), 0))
            .where(a.c.resource_provider_id == provider_id, a.c.resource_class == resource_class)
            .scalar_subquery())


# Per inventory row: its allocations counted (for the drift check and the recount).
INVENTORY_ALLOCATED = allocated(m.inventories.c.resource_provider_id,
                                m.inventories.c.resource_class)
_DRIFT = (
    sa.select(m.resource_providers.c.uuid, m.inventories.c.resource_class,
              m.inventories.c.used, INVENTORY_ALLOCATED)
    .select_from(m.inventories.join(
        m.resource_providers,
        m.resource_providers.c.id == m.inventories.c.resource_provider_id))
    .where(m.inventories.c.used != INVENTORY_ALLOCATED)
)


def usage_drift(conn: sa.Connection) -> list[tuple[str, str, int, int]]:
    """(provider uuid, class, stored usage, sum of its allocations) for
    every inventory whose stored usage is not the sum of its allocations;
    empty while every allocation write keeps it (``rtf db recount-usage``
    sets it right)."""
    return sorted((uuid, rc, int(used), int(summed))
                  for uuid, rc, used, summed in conn.execute(_DRIFT))


def fits_clauses(used: sa.ColumnElement, amount: int) -> list[sa.ColumnElement]:
    """:func:`rtframework.placement.validation.fits` in SQL over ``inventories``:
    ``amount`` within the unit constraints and ``used + amount`` within
    (total - reserved) * allocation_ratio."""
    inv = m.inventories
    return [
        inv.c.min_unit <= amount,
        inv.c.max_unit >= amount,
        # The step_size = 1 test changes nothing but lets planners estimate
        # the condition from statistics instead of guessing that it drops
        # almost every row.
        sa.or_(inv.c.step_size == 1, sa.literal(amount) % inv.c.step_size == 0),
        (inv.c.total - inv.c.reserved) * inv.c.allocation_ratio >= used + amount,
    ]
