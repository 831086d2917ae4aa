"""Allocation writes: the atomic multi-consumer replace.

One attempt reads everything it decides on in two statements (the named
consumers with what they hold; every touched provider with its generation,
inventories and usage), decides in Python, and only then writes: one
compare-and-swap UPDATE of every touched provider's generation, the
allocation rows, the consumer rows. An allocation write is a handful of
round trips whatever its size, which is what bounds its rate.

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

from rtframework.placement import errors
from rtframework.placement import types as t
from rtframework.placement.sql import models as m
from rtframework.placement.sql import queries, validation

LOG = logging.getLogger(__name__)

_a, _c, _inv, _rp = m.allocations, m.consumers, m.inventories, m.resource_providers


class ProviderRaced(Exception):
    """A provider generation moved under an allocation write: retry it."""


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


def _generation_conflict(uuid: str, current: int | None, given: int | None):
    def show(value):
        return "null" if value is None else value

    return errors.ConsumerGenerationConflict(
        f"consumer generation conflict - expected {show(current)} but got {show(given)} "
        f"(consumer {uuid})"
    )


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


# Built once: building SQLAlchemy expressions costs more than running
# these small statements, and every allocation write runs all of them.
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
              _inv.c.step_size, _inv.c.allocation_ratio, queries.INVENTORY_USED.label("used"))
    .select_from(_rp.outerjoin(_inv, _inv.c.resource_provider_id == _rp.c.id))
    .where(sa.or_(_rp.c.uuid.in_(sa.bindparam("uuids", expanding=True)),
                  _rp.c.id.in_(sa.bindparam("ids", expanding=True))))
)
# The CAS of every touched provider at once. ``id IN`` lets the database
# walk the primary key in id order, so concurrent writers lock alike.
_BUMP = (
    sa.update(_rp)
    .where(_rp.c.id.in_(sa.bindparam("ids", expanding=True)),
           sa.tuple_(_rp.c.id, _rp.c.generation).in_(sa.bindparam("pairs", expanding=True)))
    .values(generation=_rp.c.generation + 1)
)
_DELETE = sa.delete(_a).where(_a.c.consumer_id.in_(_NAMES))
_INSERT = sa.insert(_a)
_NEW_CONSUMER = sa.insert(_c)
_KEEP_CONSUMER = (
    sa.update(_c)
    .where(_c.c.id == sa.bindparam("c_id"), _c.c.generation == sa.bindparam("c_generation"))
    .values(generation=_c.c.generation + 1, project_id=sa.bindparam("c_project"),
            user_id=sa.bindparam("c_user"), consumer_type=sa.bindparam("c_type"))
)
_FORGET_CONSUMER = sa.delete(_c).where(_c.c.id == sa.bindparam("c_id"),
                                       _c.c.generation == sa.bindparam("c_generation"))


def _read_held(conn: sa.Connection, names: list[str]):
    """(consumer uuid -> row, consumer uuid -> provider id -> class -> amount)."""
    consumers: dict[str, _Consumer] = {}
    held: dict[str, dict[int, dict[str, int]]] = defaultdict(lambda: defaultdict(dict))
    for kind, uuid, row_id, generation, provider, rc, used in conn.execute(
            _HELD, {"names": names}):
        if kind == 0:
            consumers[uuid] = _Consumer(row_id, generation)
        else:
            held[uuid][provider][rc] = held[uuid][provider].get(rc, 0) + used
    return consumers, held


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


def write_once(conn: sa.Connection, writes: Sequence[t.AllocationWrite]) -> None:
    """One attempt; raises ProviderRaced when a provider generation moved."""
    names = [w.consumer_uuid for w in writes]
    if len(set(names)) != len(names):
        raise errors.InvalidRequest(f"a consumer is named twice in one write: {names}")

    consumers, held = _read_held(conn, names)
    for w in writes:
        existing = consumers.get(w.consumer_uuid)
        current = existing.generation if existing else None
        if current != w.consumer_generation:
            raise _generation_conflict(w.consumer_uuid, current, w.consumer_generation)

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

    # Writes: every touched provider's generation first.
    ids = sorted(providers)
    if ids and conn.execute(_BUMP, {
            "ids": ids, "pairs": [(i, providers[i].generation) for i in ids]}
    ).rowcount != len(ids):
        raise ProviderRaced(
            "a generation moved on resource provider(s) "
            + ", ".join(providers[i].label for i in ids)
        )
    if held:
        conn.execute(_DELETE, {"names": names})
    inserts = [
        {"resource_provider_id": by_uuid[uuid].id, "consumer_id": w.consumer_uuid,
         "resource_class": rc, "used": amount}
        for w in writes for uuid, resources in w.allocations.items()
        for rc, amount in resources.items()
    ]
    if inserts:
        conn.execute(_INSERT, inserts)

    _save_consumers(conn, writes, consumers)
    for w in writes:
        _log_changes(w, held.get(w.consumer_uuid, {}), providers)


def _save_consumers(conn: sa.Connection, writes: Sequence[t.AllocationWrite],
                    consumers: dict[str, _Consumer]) -> None:
    """Create, bump or forget each consumer row, compare-and-swap on its
    generation; new ones in one INSERT."""
    created = []
    for w in writes:
        existing = consumers.get(w.consumer_uuid)
        holds = any(w.allocations.values())
        if existing is None:
            if holds:
                created.append(w)
            continue
        params = {"c_id": existing.id, "c_generation": existing.generation}
        if holds:
            result = conn.execute(_KEEP_CONSUMER, {
                **params, "c_project": w.project_id, "c_user": w.user_id,
                "c_type": w.consumer_type})
        else:
            # Emptied: forgotten, so that the next write starts from None again.
            result = conn.execute(_FORGET_CONSUMER, params)
        if result.rowcount != 1:
            raise _generation_conflict(
                w.consumer_uuid, "a generation another writer just wrote", existing.generation
            )
    if not created:
        return
    try:
        # A savepoint would not help on a unique violation: a racing
        # creator of the same consumer has won, which is a conflict.
        conn.execute(_NEW_CONSUMER, [
            {"uuid": w.consumer_uuid, "project_id": w.project_id, "user_id": w.user_id,
             "generation": 1, "consumer_type": w.consumer_type} for w in created])
    except sa.exc.IntegrityError as exc:
        raise _generation_conflict(
            " or ".join(w.consumer_uuid for w in created),
            "the generation another writer just created", None,
        ) from exc


def _log_changes(w: t.AllocationWrite, held: dict[int, dict[str, int]],
                 providers: dict[int, _Provider]) -> None:
    if not LOG.isEnabledFor(logging.INFO):
        return
    old = {providers[pid].uuid: resources for pid, resources in held.items()}
    labels = {p.uuid: p.label for p in providers.values()}
    for provider in sorted(set(old) | set(w.allocations)):
        before = dict(old.get(provider, {}))
        after = dict(w.allocations.get(provider, {}))
        if before == after:
            continue
        reason = "claimed" if not before else "released" if not after else "changed"
        LOG.info(
            "allocation %s: consumer %s on provider %s: %s -> %s (consumer generation %s)",
            reason, w.consumer_uuid, labels[provider], before or "{}",
            after or "{}", w.consumer_generation,
        )


def delete_consumer(conn: sa.Connection, consumer_uuid: str, reason: str) -> None:
    """Remove a consumer and all it holds, bumping the providers it held."""
    old = consumer_allocations(conn, [consumer_uuid]).get(consumer_uuid, {})
    rp, a, c = m.resource_providers, m.allocations, m.consumers
    rows = {}
    if old:
        for row in conn.execute(queries.provider_select().where(rp.c.uuid.in_(sorted(old)))):
            rows[row.uuid] = row
        for row in sorted(rows.values(), key=lambda r: r.id):
            conn.execute(sa.update(rp).where(rp.c.id == row.id)
                         .values(generation=rp.c.generation + 1))
    conn.execute(sa.delete(a).where(a.c.consumer_id == consumer_uuid))
    conn.execute(sa.delete(c).where(c.c.uuid == consumer_uuid))
    for provider, before in sorted(old.items()):
        LOG.info("allocation released: consumer %s on provider %s: %s -> {} (%s)",
                 consumer_uuid, queries.label(rows[provider]), before, reason)
