"""Allocation reads: what a consumer holds, what a provider has given out.

(The writes are in ``allocations``.)
"""

from __future__ import annotations

import sqlalchemy as sa

from rtframework import db
from rtframework.placement import types as t
from rtframework.placement import validation
from rtframework.placement.sql import allocations as alloc
from rtframework.placement.sql import models as m
from rtframework.placement.sql import queries
from rtframework.placement.sql.dberrors import translated


def of_consumer(engine: sa.Engine, consumer_uuid: str) -> t.ConsumerAllocations:
    """An unknown consumer holds nothing and has generation None."""
    consumer_uuid = validation.normalize_uuid(consumer_uuid, "consumer uuid")
    c = m.consumers
    with translated(), db.read(engine) as conn:
        row = conn.execute(sa.select(c).where(c.c.uuid == consumer_uuid)).first()
        held = alloc.consumer_allocations(conn, [consumer_uuid]).get(consumer_uuid, {})
    if row is None:
        return t.ConsumerAllocations(consumer_uuid=consumer_uuid, allocations={})
    return t.ConsumerAllocations(
        consumer_uuid=consumer_uuid,
        allocations={p: dict(r) for p, r in held.items()},
        generation=row.generation, project_id=row.project_id, user_id=row.user_id,
        consumer_type=row.consumer_type,
    )


def of_consumers(engine: sa.Engine, consumer_uuids: list[str]) -> dict[str, t.ConsumerAllocations]:
    """:func:`of_consumer` of many consumers, two statements per
    queries.SQLITE_BOUND_VALUES of them (SQLite's default limit of bound
    values before 3.32, on every engine)."""
    step = queries.SQLITE_BOUND_VALUES
    uuids = list(dict.fromkeys(
        validation.normalize_uuid(u, "consumer uuid") for u in consumer_uuids))
    c = m.consumers
    found: dict[str, t.ConsumerAllocations] = {}
    with translated(), db.read(engine) as conn:
        for first in range(0, len(uuids), step):
            chunk = uuids[first:first + step]
            rows = {row.uuid: row for row in conn.execute(sa.select(c).where(c.c.uuid.in_(chunk)))}
            held = alloc.consumer_allocations(conn, chunk)
            for uuid in chunk:
                row = rows.get(uuid)
                found[uuid] = t.ConsumerAllocations(consumer_uuid=uuid, allocations={}) \
                    if row is None else t.ConsumerAllocations(
                        consumer_uuid=uuid,
                        allocations={p: dict(r) for p, r in held.get(uuid, {}).items()},
                        generation=row.generation, project_id=row.project_id,
                        user_id=row.user_id, consumer_type=row.consumer_type)
    return found


def of_provider(engine: sa.Engine, uuid: str) -> dict[str, dict[str, int]]:
    """consumer uuid -> class -> amount, on this provider."""
    uuid = validation.normalize_uuid(uuid, "provider uuid")
    a = m.allocations
    found: dict[str, dict[str, int]] = {}
    with translated(), db.read(engine) as conn:
        row = queries.provider_row(conn, uuid)
        for consumer, rc, used in conn.execute(
            sa.select(a.c.consumer_id, a.c.resource_class, a.c.used)
            .where(a.c.resource_provider_id == row.id).order_by(a.c.id)
        ):
            per = found.setdefault(consumer, {})
            per[rc] = per.get(rc, 0) + used
    return found
