"""Allocation writes: the atomic multi-consumer replace.

One attempt reads everything it decides on first (consumers, their current
allocations, then provider generations, then inventory and usage), decides
in Python, and only then writes, starting with a compare-and-swap of every
touched provider's generation.

Why that is safe at READ COMMITTED: a concurrent writer that changes usage
of a provider also bumps its generation in the same transaction. We read
the generation *before* the usage, so whatever usage we saw is at least as
new as the generation; if anyone committed since, our CAS finds a different
generation and the whole attempt is retried on fresh data. Two writers on
one provider cannot both pass the CAS from the same generation, because the
UPDATE takes the row lock and re-checks the generation once the first one
commits.
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


class ProviderRaced(Exception):
    """A provider generation moved under an allocation write: retry it."""


@dataclass(frozen=True)
class _Consumer:
    id: int
    generation: int


def _generation_conflict(uuid: str, current: int | None, given: int | None):
    def show(value):
        return "null" if value is None else value

    return errors.ConsumerGenerationConflict(
        f"consumer generation conflict - expected {show(current)} but got {show(given)} "
        f"(consumer {uuid})"
    )


def consumer_allocations(conn: sa.Connection, consumer_uuids: Sequence[str]):
    """consumer uuid -> provider uuid -> class -> amount."""
    a, rp = m.allocations, m.resource_providers
    found: dict[str, dict[str, dict[str, int]]] = defaultdict(lambda: defaultdict(dict))
    if consumer_uuids:
        rows = conn.execute(
            sa.select(a.c.consumer_id, rp.c.uuid, a.c.resource_class, a.c.used)
            .select_from(a.join(rp, a.c.resource_provider_id == rp.c.id))
            .where(a.c.consumer_id.in_(list(consumer_uuids)))
            .order_by(a.c.id)
        )
        for consumer, provider, rc, used in rows:
            found[consumer][provider][rc] = found[consumer][provider].get(rc, 0) + used
    return found


def write_once(conn: sa.Connection, writes: Sequence[t.AllocationWrite]) -> None:
    """One attempt; raises ProviderRaced when a provider generation moved."""
    names = [w.consumer_uuid for w in writes]
    if len(set(names)) != len(names):
        raise errors.InvalidRequest(f"a consumer is named twice in one write: {names}")

    c = m.consumers
    consumers = {
        row.uuid: _Consumer(row.id, row.generation)
        for row in conn.execute(sa.select(c.c.id, c.c.uuid, c.c.generation)
                                .where(c.c.uuid.in_(names)))
    }
    for w in writes:
        existing = consumers.get(w.consumer_uuid)
        current = existing.generation if existing else None
        if current != w.consumer_generation:
            raise _generation_conflict(w.consumer_uuid, current, w.consumer_generation)

    old = consumer_allocations(conn, names)

    # Providers: generations first (see the module docstring for why).
    wanted = sorted({p for w in writes for p in w.allocations}
                    | {p for held in old.values() for p in held})
    rows = {}
    by_uuid = queries.provider_select().where(m.resource_providers.c.uuid.in_(wanted))
    for row in conn.execute(by_uuid):
        rows[row.uuid] = row
    for w in writes:
        for provider in w.allocations:
            if provider not in rows:
                raise errors.ProviderNotFound(
                    f"resource provider {provider} not found (allocation of consumer "
                    f"{w.consumer_uuid})"
                )
    ids = sorted({rows[p].id for w in writes for p in w.allocations if w.allocations[p]})
    inventories = queries.inventories_of(conn, ids)
    usages = queries.usages_of(conn, ids)

    requested: dict[tuple[str, str], int] = defaultdict(int)
    released: dict[tuple[str, str], int] = defaultdict(int)
    for w in writes:
        for provider, resources in w.allocations.items():
            row = rows[provider]
            for rc, amount in resources.items():
                inv = inventories.get(row.id, {}).get(rc)
                validation.check_amount(queries.label(row), rc, amount, inv)
                requested[provider, rc] += amount
        for provider, resources in old.get(w.consumer_uuid, {}).items():
            for rc, amount in resources.items():
                released[provider, rc] += amount
    for (provider, rc), amount in sorted(requested.items()):
        row = rows[provider]
        before = usages.get((row.id, rc), 0)
        validation.check_capacity(
            queries.label(row), rc, used_before=before, used_others=before - released[provider, rc],
            requested=amount, inv=inventories[row.id][rc],
        )

    # Writes, providers first and in id order so writers lock alike.
    rp = m.resource_providers
    for row in sorted(rows.values(), key=lambda r: r.id):
        result = conn.execute(
            sa.update(rp).where(rp.c.id == row.id, rp.c.generation == row.generation)
            .values(generation=row.generation + 1)
        )
        if result.rowcount != 1:
            raise ProviderRaced(f"resource provider {queries.label(row)} changed generation")

    a = m.allocations
    if names:
        conn.execute(sa.delete(a).where(a.c.consumer_id.in_(names)))
    inserts = [
        {"resource_provider_id": rows[provider].id, "consumer_id": w.consumer_uuid,
         "resource_class": rc, "used": amount}
        for w in writes for provider, resources in w.allocations.items()
        for rc, amount in resources.items()
    ]
    if inserts:
        conn.execute(sa.insert(a), inserts)

    for w in writes:
        _save_consumer(conn, w, consumers.get(w.consumer_uuid))
        _log_changes(w, old.get(w.consumer_uuid, {}), rows)


def _save_consumer(conn: sa.Connection, w: t.AllocationWrite, existing: _Consumer | None) -> None:
    c = m.consumers
    holds = any(w.allocations.values())
    if existing is None:
        if not holds:
            return
        try:
            # A savepoint would not help on a unique violation: a racing
            # creator of the same consumer has won, which is a conflict.
            conn.execute(sa.insert(c).values(
                uuid=w.consumer_uuid, project_id=w.project_id, user_id=w.user_id,
                generation=1, consumer_type=w.consumer_type,
            ))
        except sa.exc.IntegrityError as exc:
            raise _generation_conflict(
                w.consumer_uuid, "the generation another writer just created", None
            ) from exc
        return
    if holds:
        result = conn.execute(
            sa.update(c).where(c.c.id == existing.id, c.c.generation == existing.generation)
            .values(generation=existing.generation + 1, project_id=w.project_id,
                    user_id=w.user_id, consumer_type=w.consumer_type)
        )
    else:
        # Emptied: forgotten, so that the next write starts from None again.
        result = conn.execute(
            sa.delete(c).where(c.c.id == existing.id, c.c.generation == existing.generation)
        )
    if result.rowcount != 1:
        raise _generation_conflict(
            w.consumer_uuid, "a generation another writer just wrote", existing.generation
        )


def _log_changes(w: t.AllocationWrite, old: dict[str, dict[str, int]], rows) -> None:
    for provider in sorted(set(old) | set(w.allocations)):
        before = dict(old.get(provider, {}))
        after = dict(w.allocations.get(provider, {}))
        if before == after:
            continue
        reason = "claimed" if not before else "released" if not after else "changed"
        LOG.info(
            "allocation %s: consumer %s on provider %s: %s -> %s (consumer generation %s)",
            reason, w.consumer_uuid, queries.label(rows[provider]), before or "{}",
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
