"""The aggregates each provider is a member of."""

from __future__ import annotations

import sqlalchemy as sa

from rtframework import db
from rtframework.placement import types as t
from rtframework.placement import validation
from rtframework.placement.sql import models as m
from rtframework.placement.sql import queries
from rtframework.placement.sql.dberrors import translated


def of_provider(engine: sa.Engine, uuid: str) -> t.ProviderAggregates:
    uuid = validation.normalize_uuid(uuid, "provider uuid")
    with translated(), db.read(engine) as conn:
        row = queries.provider_row(conn, uuid)
        return t.ProviderAggregates(
            generation=row.generation, aggregates=queries.aggregates_of(conn, row.id)
        )


def set_of_provider(engine: sa.Engine, uuid: str, generation: int,
                    aggregates: frozenset[str], *, bump: bool = True) -> int:
    """Replace the provider's aggregates; the new generation (the same
    one with ``bump=False``, still checked)."""
    uuid = validation.normalize_uuid(uuid, "provider uuid")
    validation.check_generation(generation, f"generation of provider {uuid}")
    aggregates = validation.aggregates(aggregates)
    pa, agg_t = m.provider_aggregates, m.placement_aggregates
    with translated(), db.transaction(engine) as conn:
        row = queries.provider_row(conn, uuid)
        if bump:
            new_gen = queries.bump_generation(conn, row, generation)
        else:
            queries.keep_generation(row, generation)
            new_gen = generation
        queries.insert_ignoring_duplicates(
            conn, agg_t, [{"uuid": a} for a in sorted(aggregates)]
        )
        conn.execute(sa.delete(pa).where(pa.c.resource_provider_id == row.id))
        if aggregates:
            ids = conn.execute(
                sa.select(agg_t.c.id).where(agg_t.c.uuid.in_(sorted(aggregates)))
            ).scalars().all()
            conn.execute(sa.insert(pa), [
                {"resource_provider_id": row.id, "aggregate_id": i} for i in ids
            ])
        return new_gen
