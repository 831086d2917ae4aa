"""Usages: what is allocated, summed per provider or per project/user."""

from __future__ import annotations

import sqlalchemy as sa

from rtframework import db
from rtframework.placement import validation
from rtframework.placement.sql import models as m
from rtframework.placement.sql import queries
from rtframework.placement.sql.dberrors import translated


def of_provider(engine: sa.Engine, uuid: str) -> dict[str, int]:
    """class -> amount used, for every class the provider has inventory of."""
    uuid = validation.normalize_uuid(uuid, "provider uuid")
    with translated(), db.read(engine) as conn:
        row = queries.provider_row(conn, uuid)
        invs = queries.inventories_of(conn, [row.id]).get(row.id, {})
        used = queries.usages_of(conn, [row.id])
    return {rc: used.get((row.id, rc), 0) for rc in sorted(invs)}


def of_project(engine: sa.Engine, project_id: str, user_id: str | None = None) -> dict[str, int]:
    validation.check_external_id(project_id, "project id")
    if user_id is not None:
        validation.check_external_id(user_id, "user id")
    a, c = m.allocations, m.consumers
    stmt = (
        sa.select(a.c.resource_class, sa.func.sum(a.c.used))
        .select_from(a.join(c, a.c.consumer_id == c.c.uuid))
        .where(c.c.project_id == project_id)
        .group_by(a.c.resource_class)
    )
    if user_id is not None:
        stmt = stmt.where(c.c.user_id == user_id)
    with translated(), db.read(engine) as conn:
        return {rc: int(used) for rc, used in conn.execute(stmt)}
