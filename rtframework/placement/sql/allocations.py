"""Allocation writes: the atomic multi-consumer replace.

One attempt reads everything it decides on in two statements (the named
consumers with what they hold; every touched provider with its generation,
inventories and usage), decides in Python, and only then writes what it
decided (a :class:`~write_plan.WritePlan`): a compare-and-swap of every
touched provider's generation, the allocation rows, the consumer rows. An
allocation write is a few round trips whatever its size (four on
PostgreSQL), and round trips are what bound its rate.

Why that is safe at READ COMMITTED: a concurrent writer that changes usage
of a provider also bumps its generation in the same transaction, and one
statement reads generation and usage from one snapshot. If anyone
committed since, our CAS finds a different generation and the whole
attempt is retried on fresh data. Two writers on one provider cannot both
pass the CAS from the same generation, because the UPDATE takes the row
lock and re-checks the generation once the first one commits.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import sqlalchemy as sa

from rtframework import db
from rtframework.placement import errors, validation
from rtframework.placement import types as t
from rtframework.placement.sql import models as m
from rtframework.placement.sql import pg_write, queries, write_plan
from rtframework.placement.sql.write_plan import (
    ConsumerRow,
    ProviderRaced,
    WritePlan,
    generation_conflict,
)

LOG = logging.getLogger(__name__)

_a, _c, _inv, _rp = m.allocations, m.consumers, m.inventories, m.resource_providers


@dataclass(frozen=True)
class _Consumer:
    id: int
    generation: int


@dataclass
class _Provider:
    """A touched provider as the write read it."""

    id: int
    uuid: str
    name: str
    generation: int
    inventories: dict[str, t.Inventory]
    usages: dict[str, int]

    @property
    def label(self) -> str:
        return queries.label(self)


def consumer_allocations(conn: sa.Connection, consumer_uuids: Sequence[str]):
    """consumer uuid -> provider uuid -> class -> amount."""
    found: dict[str, dict[str, dict[str, int]]] = defaultdict(lambda: defaultdict(dict))
    if consumer_uuids:
        rows = conn.execute(
            sa.select(_a.c.consumer_id, _rp.c.uuid, _a.c.resource_class, _a.c.used)
            .select_from(_a.join(_rp, _a.c.resource_provider_id == _rp.c.id))
            .where(_a.c.consumer_id.in_(list(consumer_uuids)))
            .order_by(_a.c.id)
        )
        for consumer, provider, rc, used in rows:
            found[consumer][provider][rc] = found[consumer][provider].get(rc, 0) + used
    return found


# The two reads of every allocation write, built once: building SQLAlchemy
# expressions costs more than running these small statements.
_NAMES = sa.bindparam("names", expanding=True)
_NO_INT = sa.cast(sa.null(), sa.Integer)
# The named consumers (kind 0) and their allocation rows (kind 1), even
# rows of a consumer with no consumer row, in one round trip.
_HELD = sa.union_all(
    sa.select(sa.literal(0, sa.Integer).label("kind"), _c.c.uuid, _c.c.id, _c.c.generation,
              _NO_INT.label("provider_id"), sa.cast(sa.null(), m.NAME).label("rc"),
              _NO_INT.label("used"))
    .where(_c.c.uuid.in_(_NAMES)),
    sa.select(sa.literal(1, sa.Integer), _a.c.consumer_id, _a.c.id, _NO_INT,
              _a.c.resource_provider_id, _a.c.resource_class, _a.c.used)
    .where(_a.c.consumer_id.in_(_NAMES)),
)
# Touched providers, one row per inventory class (or one without any),
# with the class's usage: generation and usage from one snapshot.
_PROVIDERS = (
    sa.select(_rp.c.id, _rp.c.uuid, _rp.c.name, _rp.c.generation, _inv.c.resource_class,
              _inv.c.total, _inv.c.reserved, _inv.c.min_unit, _inv.c.max_unit,
              _inv.c.step_size, _inv.c.allocation_ratio, _inv.c.used)
    .select_from(_rp.outerjoin(_inv, _inv.c.resource_provider_id == _rp.c.id))
    .where(sa.or_(_rp.c.uuid.in_(sa.bindparam("uuids", expanding=True)),
                  _rp.c.id.in_(sa.bindparam("ids", expanding=True))))
)


def _read_held(conn: sa.Connection, names: list[str]):
    """(consumer uuid -> row, consumer uuid -> provider id -> class -> amount,
    the ids of those allocation rows)."""
    consumers: dict[str, _Consumer] = {}
    held: dict[str, dict[int, dict[str, int]]] = defaultdict(lambda: defaultdict(dict))
    row_ids: list[int] = []
    for kind, uuid, row_id, generation, provider, rc, used in conn.execute(
            _HELD, {"names": names}):
        if kind == 0:
            consumers[uuid] = _Consumer(row_id, generation)
        else:
            held[uuid][provider][rc] = held[uuid][provider].get(rc, 0) + used
            row_ids.append(row_id)
    return consumers, held, sorted(row_ids)


def _read_providers(conn: sa.Connection, uuids: list[str], ids: list[int]):
    """provider id -> _Provider, for the providers named by uuid or id."""
    found: dict[int, _Provider] = {}
    for row in conn.execute(_PROVIDERS, {"uuids": uuids, "ids": ids}):
        provider = found.get(row.id)
        if provider is None:
            provider = found[row.id] = _Provider(row.id, row.uuid, row.name, row.generation,
                                                 {}, {})
        if row.resource_class is not None:
            provider.inventories[row.resource_class] = queries.to_inventory(row)
            provider.usages[row.resource_class] = int(row.used)
    return found


def write(engine: sa.Engine, writes: Sequence[t.AllocationWrite],
          statement_engine: sa.Engine) -> None:
    """One attempt at ``writes`` in its own transaction(s).

    On PostgreSQL the one-statement write (:mod:`pg_write`) goes first, on
    ``statement_engine`` (sessions with pg_write.SESSION_SETTINGS, or
    ``engine`` itself); whatever it declines (an error to name, a race, a
    consumer created meanwhile) it leaves unwritten, for :func:`write_once`.
    """
    if engine.dialect.name == "postgresql":
        try:
            with db.autocommit(statement_engine) as conn:
                if pg_write.try_write(conn, writes):
                    return
        except sa.exc.IntegrityError:
            pass
    with db.transaction(engine) as conn:
        write_once(conn, writes)


def write_once(conn: sa.Connection, writes: Sequence[t.AllocationWrite]) -> None:
    """One attempt; raises ProviderRaced when a provider generation moved."""
    names = [w.consumer_uuid for w in writes]
    consumers, held, held_rows = _read_held(conn, names)
    for w in writes:
        existing = consumers.get(w.consumer_uuid)
        current = existing.generation if existing else None
        if current != w.consumer_generation:
            raise generation_conflict(w.consumer_uuid, current, w.consumer_generation)

    wanted = sorted({p for w in writes for p in w.allocations})
    held_ids = sorted({p for per in held.values() for p in per})
    providers = _read_providers(conn, wanted, held_ids)
    by_uuid = {p.uuid: p for p in providers.values()}
    for w in writes:
        for uuid in w.allocations:
            if uuid not in by_uuid:
                raise errors.ProviderNotFound(
                    f"resource provider {uuid} not found (allocation of consumer "
                    f"{w.consumer_uuid})"
                )
    # Only once every provider of every consumer is known to exist, as
    # Placement looks up classes after providers.
    for w in writes:
        _check_classes_exist(conn, w, by_uuid)

    requested: dict[tuple[int, str], int] = defaultdict(int)
    released: dict[tuple[int, str], int] = defaultdict(int)
    for w in writes:
        for uuid, resources in w.allocations.items():
            provider = by_uuid[uuid]
            for rc, amount in resources.items():
                validation.check_amount(provider.label, rc, amount,
                                        provider.inventories.get(rc))
                requested[provider.id, rc] += amount
        for provider_id, resources in held.get(w.consumer_uuid, {}).items():
            for rc, amount in resources.items():
                released[provider_id, rc] += amount
    for (provider_id, rc), amount in sorted(requested.items()):
        provider = providers[provider_id]
        before = provider.usages[rc]
        validation.check_capacity(
            provider.label, rc, used_before=before, used_others=before - released[provider_id, rc],
            requested=amount, inv=provider.inventories[rc],
        )

    try:
        write_plan.apply(conn, _plan(writes, consumers, held, held_rows, providers))
    except sa.exc.IntegrityError as exc:
        if getattr(exc.orig, "pgcode", None) == _PG_FOREIGN_KEY_VIOLATION:
            # In one statement PostgreSQL checks the provider of the new
            # rows before the CAS of a provider deleted meanwhile can tell.
            raise ProviderRaced(f"a resource provider went away: {exc.orig}") from exc
        # A racing creator of the same consumer has won: a conflict (a
        # savepoint would not help).
        created = [w.consumer_uuid for w in writes
                   if w.consumer_uuid not in consumers and any(w.allocations.values())]
        raise generation_conflict(
            " or ".join(created), "the generation another writer just created", None
        ) from exc
    for w in writes:
        _log_changes(w, held.get(w.consumer_uuid, {}), providers)


_PG_FOREIGN_KEY_VIOLATION = "23503"


def _check_classes_exist(conn: sa.Connection, w: t.AllocationWrite,
                         by_uuid: dict[str, _Provider]) -> None:
    """A class that does not exist is named as such (as Placement does),
    not as one the provider has no inventory of. Only classes missing from
    the providers' inventories are looked up: the error path alone pays."""
    absent = {rc for uuid, resources in w.allocations.items() for rc in resources
              if rc not in by_uuid[uuid].inventories
              and rc not in validation.STANDARD_CLASSES}
    queries.require_classes(conn, absent, f"allocation of consumer {w.consumer_uuid}")


def _plan(writes: Sequence[t.AllocationWrite], consumers: dict[str, _Consumer],
          held: dict[str, dict[int, dict[str, int]]], held_rows: list[int],
          providers: dict[int, _Provider]) -> WritePlan:
    by_uuid = {p.uuid: p for p in providers.values()}
    plan = WritePlan(
        providers=[(pid, providers[pid].generation, providers[pid].label)
                   for pid in sorted(providers)],
        replaced=held_rows,
        allocations=[(by_uuid[uuid].id, w.consumer_uuid, rc, amount)
                     for w in writes for uuid, resources in w.allocations.items()
                     for rc, amount in resources.items()],
    )
    change: dict[tuple[int, str], int] = defaultdict(int)
    for pid, _uuid, rc, amount in plan.allocations:
        change[pid, rc] += amount
    for w in writes:
        for pid, resources in held.get(w.consumer_uuid, {}).items():
            for rc, amount in resources.items():
                change[pid, rc] -= amount
    plan.usage = [(pid, rc, delta) for (pid, rc), delta in sorted(change.items()) if delta]
    for w in writes:
        existing = consumers.get(w.consumer_uuid)
        holds = any(w.allocations.values())
        if existing is None and not holds:
            continue
        row = ConsumerRow(w.consumer_uuid, w.project_id, w.user_id, w.consumer_type,
                          *((existing.id, existing.generation) if existing else ()))
        if existing is None:
            plan.created.append(row)
        elif holds:
            plan.kept.append(row)
        else:
            # Emptied: forgotten, so that the next write starts from None again.
            plan.forgotten.append(row)
    return plan


def _log_changes(w: t.AllocationWrite, held: dict[int, dict[str, int]],
                 providers: dict[int, _Provider]) -> None:
    if not LOG.isEnabledFor(logging.INFO):
        return
    old = {providers[pid].uuid: resources for pid, resources in held.items()}
    labels = {p.uuid: p.label for p in providers.values()}
    queries.log_allocation_change(LOG, w, old, labels)


def delete_consumer(conn: sa.Connection, consumer_uuid: str, reason: str) -> None:
    """Remove a consumer and all it holds, bumping the providers it held.

    The providers read first are bumped (locked); the consumer's rows are
    then read again under those locks, and a row on any other provider
    means a write moved the consumer meanwhile: ProviderRaced, retried.
    """
    rp, a, c = m.resource_providers, m.allocations, m.consumers
    first = {pid for (pid,) in conn.execute(
        sa.select(a.c.resource_provider_id).where(a.c.consumer_id == consumer_uuid))}
    rows = {row.id: row for row in conn.execute(
        queries.provider_select().where(rp.c.id.in_(sorted(first))))}
    for pid in sorted(rows):
        conn.execute(sa.update(rp).where(rp.c.id == pid).values(generation=rp.c.generation + 1))
    held = conn.execute(
        sa.select(a.c.id, a.c.resource_provider_id, a.c.resource_class, a.c.used)
        .where(a.c.consumer_id == consumer_uuid).with_for_update()).all()
    if any(pid not in rows for _id, pid, _rc, _used in held):
        raise ProviderRaced(f"consumer {consumer_uuid} moved while it was being deleted")
    old: dict[int, dict[str, int]] = defaultdict(dict)
    for _id, pid, rc, used in held:
        old[pid][rc] = old[pid].get(rc, 0) + used
    released = [{"u_id": pid, "u_class": rc, "u_delta": -amount}
                for pid, resources in sorted(old.items())
                for rc, amount in sorted(resources.items())]
    if released:
        conn.execute(write_plan.COUNT_USAGE, released)
        conn.execute(sa.delete(a).where(a.c.id.in_([row_id for row_id, *_ in held])))
    # A row the locked read could not see (PostgreSQL skips a row whose
    # writer it waited for when that writer moved the consumer on again).
    if conn.execute(sa.select(a.c.id).where(a.c.consumer_id == consumer_uuid).limit(1)).first():
        raise ProviderRaced(f"consumer {consumer_uuid} moved while it was being deleted")
    conn.execute(sa.delete(c).where(c.c.uuid == consumer_uuid))
    for pid, before in sorted(old.items(), key=lambda item: rows[item[0]].uuid):
        LOG.info("allocation released: consumer %s on provider %s: %s -> {} (%s)",
                 consumer_uuid, queries.label(rows[pid]), before, reason)
