"""Usages: what is allocated, per provider (stored with each inventory)
or summed per project/user; and the recount of the stored usage."""

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


def of_project_by_type(engine: sa.Engine, project_id: str, user_id: str | None = None,
                       consumer_type: str | None = None) -> dict[str, dict[str, int]]:
    """consumer type -> class -> amount, plus ``consumer_count``: a type
    per group (``unknown`` for consumers without one); ``consumer_type``
    keeps one group, ``all`` sums them into one."""
    validation.check_external_id(project_id, "project id")
    if user_id is not None:
        validation.check_external_id(user_id, "user id")
    a, c = m.allocations, m.consumers
    kind = sa.func.coalesce(c.c.consumer_type, "unknown")
    # "all" is one group: PostgreSQL takes no constant in GROUP BY.
    by_kind = () if consumer_type == "all" else (kind,)
    group = sa.literal("all") if consumer_type == "all" else kind
    stmt = (
        sa.select(group.label("kind"), a.c.resource_class, sa.func.sum(a.c.used))
        .select_from(a.join(c, a.c.consumer_id == c.c.uuid))
        .where(c.c.project_id == project_id)
        .group_by(*by_kind, a.c.resource_class)
    )
    counts = (
        sa.select(group.label("kind"), sa.func.count(sa.distinct(c.c.uuid)))
        .select_from(a.join(c, a.c.consumer_id == c.c.uuid))
        .where(c.c.project_id == project_id)
        .group_by(*by_kind)
    )
    if user_id is not None:
        stmt, counts = stmt.where(c.c.user_id == user_id), counts.where(c.c.user_id == user_id)
    if consumer_type not in (None, "all"):
        stmt, counts = stmt.where(kind == consumer_type), counts.where(kind == consumer_type)
    found: dict[str, dict[str, int]] = {}
    with translated(), db.read(engine) as conn:
        for group_name, rc, used in conn.execute(stmt):
            found.setdefault(group_name, {})[rc] = int(used)
        for group_name, count in conn.execute(counts):
            found.setdefault(group_name, {})["consumer_count"] = int(count)
    return found


def recount(engine: sa.Engine) -> list[tuple[str, str, int, int]]:
    """Set every inventory's stored usage to the sum of its allocations;
    (provider uuid, class, stored, counted) for each row that changed.

    Every provider is locked first, as an allocation write locks the
    providers it touches, so writes wait for the recount instead of
    slipping between its read and its update.
    """
    rp, inv = m.resource_providers, m.inventories
    with translated(), db.transaction(engine) as conn:
        if conn.dialect.name != "sqlite":  # SQLite: BEGIN IMMEDIATE locks the file
            conn.execute(sa.select(rp.c.id).order_by(rp.c.id).with_for_update()).all()
        changed = sorted(queries.usage_drift(conn))
        if changed:
            conn.execute(sa.update(inv).values(used=queries.INVENTORY_ALLOCATED)
                         .where(inv.c.used != queries.INVENTORY_ALLOCATED))
    return changed
