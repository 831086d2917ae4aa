"""Applying a decided allocation write.

:mod:`allocations` reads and decides; what it decided is a
:class:`WritePlan`: the compare-and-swap of every touched provider's
generation, the consumers' old rows to delete, the new rows, and each
consumer row to create, bump or forget (compare-and-swap on its
generation). :func:`apply` writes a plan in the caller's transaction:

* on PostgreSQL as one statement of data-modifying CTEs over arrays, so
  that a write is one round trip however many rows and consumers it has;
* elsewhere statement by statement (executemany for rows), stopping at
  the first compare-and-swap that misses.

Either way a missed provider CAS, or old rows already gone, raises
:class:`ProviderRaced` (retried by the backend), a missed consumer CAS a
consumer generation conflict, and a consumer created meanwhile by another
writer the database's IntegrityError.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import sqlalchemy as sa

from rtframework.placement import errors
from rtframework.placement.sql import models as m

_a, _c, _inv, _rp = m.allocations, m.consumers, m.inventories, m.resource_providers


class ProviderRaced(Exception):
    """Another writer got in first (a provider generation moved, or the
    allocation rows the write read changed): retry the write."""


def generation_conflict(uuid: str, current, given) -> errors.ConsumerGenerationConflict:
    def show(value):
        return "null" if value is None else value

    return errors.ConsumerGenerationConflict(
        f"consumer generation conflict - expected {show(current)} but got {show(given)} "
        f"(consumer {uuid})"
    )


@dataclass(frozen=True)
class ConsumerRow:
    uuid: str
    project_id: str
    user_id: str
    consumer_type: str | None
    # The row's id and generation as read; None for a consumer to create.
    id: int | None = None
    generation: int | None = None


@dataclass
class WritePlan:
    # (id, generation as read, label for errors), in id order.
    providers: list[tuple[int, int, str]] = field(default_factory=list)
    # The ids of the consumers' allocation rows as read: exactly these go
    # (any other count deleted means another writer moved them meanwhile).
    replaced: list[int] = field(default_factory=list)
    # (provider id, consumer uuid, resource class, amount)
    allocations: list[tuple[int, str, str, int]] = field(default_factory=list)
    # (provider id, resource class, change of its stored usage), non-zero only
    usage: list[tuple[int, str, int]] = field(default_factory=list)
    created: list[ConsumerRow] = field(default_factory=list)
    kept: list[ConsumerRow] = field(default_factory=list)
    forgotten: list[ConsumerRow] = field(default_factory=list)

    def provider_raced(self) -> ProviderRaced:
        return ProviderRaced("a generation moved on resource provider(s) "
                             + ", ".join(label for _id, _gen, label in self.providers))

    def rows_raced(self) -> ProviderRaced:
        """Fewer of the rows read were left to delete: another writer
        replaced or removed them meanwhile."""
        holders = ", ".join(row.uuid for row in self.kept + self.forgotten)
        return ProviderRaced(f"the allocations of consumer(s) {holders or 'being replaced'} "
                             "changed while this write replaced them")


def apply(conn: sa.Connection, plan: WritePlan) -> None:
    if conn.dialect.name == "postgresql":
        _apply_in_one_statement(conn, plan)
    else:
        _apply_statement_by_statement(conn, plan)


def _lost(row: ConsumerRow) -> errors.ConsumerGenerationConflict:
    return generation_conflict(row.uuid, "a generation another writer just wrote",
                               row.generation)


# -- every engine -----------------------------------------------------------

# ``id IN`` lets the database walk the primary key in id order, so
# concurrent writers lock alike.
_BUMP = (
    sa.update(_rp)
    .where(_rp.c.id.in_(sa.bindparam("ids", expanding=True)),
           sa.tuple_(_rp.c.id, _rp.c.generation).in_(sa.bindparam("pairs", expanding=True)))
    .values(generation=_rp.c.generation + 1)
)
_DELETE = sa.delete(_a).where(_a.c.id.in_(sa.bindparam("ids", expanding=True)))
_INSERT = sa.insert(_a)
COUNT_USAGE = (
    sa.update(_inv)
    .where(_inv.c.resource_provider_id == sa.bindparam("u_id"),
           _inv.c.resource_class == sa.bindparam("u_class"))
    .values(used=_inv.c.used + sa.bindparam("u_delta"))
)
_CREATE = sa.insert(_c)
_MINE = sa.and_(_c.c.id == sa.bindparam("c_id"), _c.c.generation == sa.bindparam("c_generation"))
_KEEP = sa.update(_c).where(_MINE).values(
    generation=_c.c.generation + 1, project_id=sa.bindparam("c_project"),
    user_id=sa.bindparam("c_user"), consumer_type=sa.bindparam("c_type"))
_FORGET = sa.delete(_c).where(_MINE)


def _apply_statement_by_statement(conn: sa.Connection, plan: WritePlan) -> None:
    if plan.providers:
        ids = [pid for pid, _gen, _label in plan.providers]
        pairs = [(pid, gen) for pid, gen, _label in plan.providers]
        if conn.execute(_BUMP, {"ids": ids, "pairs": pairs}).rowcount != len(ids):
            raise plan.provider_raced()
    if plan.replaced:
        if conn.execute(_DELETE, {"ids": plan.replaced}).rowcount != len(plan.replaced):
            raise plan.rows_raced()
    if plan.allocations:
        conn.execute(_INSERT, [
            {"resource_provider_id": pid, "consumer_id": uuid, "resource_class": rc,
             "used": used} for pid, uuid, rc, used in plan.allocations])
    if plan.usage:
        conn.execute(COUNT_USAGE, [{"u_id": pid, "u_class": rc, "u_delta": delta}
                              for pid, rc, delta in plan.usage])
    for row in plan.kept:
        if conn.execute(_KEEP, {"c_id": row.id, "c_generation": row.generation,
                                "c_project": row.project_id, "c_user": row.user_id,
                                "c_type": row.consumer_type}).rowcount != 1:
            raise _lost(row)
    for row in plan.forgotten:
        if conn.execute(_FORGET, {"c_id": row.id,
                                  "c_generation": row.generation}).rowcount != 1:
            raise _lost(row)
    if plan.created:
        conn.execute(_CREATE, [
            {"uuid": row.uuid, "project_id": row.project_id, "user_id": row.user_id,
             "generation": 1, "consumer_type": row.consumer_type} for row in plan.created])


# -- PostgreSQL ---------------------------------------------------------------

# Every sub-statement sees the snapshot the statement started with and
# touches its own rows; the CAS UPDATEs still wait for a concurrent
# writer's row lock and re-check the generation after it commits.
_IN_ONE_STATEMENT = sa.text("""
WITH bumped AS (
    UPDATE resource_providers SET generation = generation + 1
    WHERE id = ANY(:p_ids ::integer[])
      AND (id, generation) IN (SELECT * FROM unnest(:p_ids ::integer[], :p_gens ::integer[]))
    RETURNING 1
), replaced AS (
    DELETE FROM allocations WHERE id = ANY(:replaced ::integer[]) RETURNING 1
), inserted AS (
    INSERT INTO allocations (resource_provider_id, consumer_id, resource_class, used)
    SELECT * FROM unnest(:a_providers ::integer[], :a_consumers ::varchar[],
                         :a_classes ::varchar[], :a_used ::integer[])
), counted AS (
    UPDATE inventories i SET used = i.used + u.delta
    FROM unnest(:u_ids ::integer[], :u_classes ::varchar[], :u_deltas ::integer[])
         AS u(pid, rc, delta)
    WHERE i.resource_provider_id = u.pid AND i.resource_class = u.rc
), created AS (
    INSERT INTO consumers (uuid, project_id, user_id, generation, consumer_type)
    SELECT uuid, project_id, user_id, 1, consumer_type
    FROM unnest(:n_uuids ::varchar[], :n_projects ::varchar[], :n_users ::varchar[],
                :n_types ::varchar[]) AS n(uuid, project_id, user_id, consumer_type)
), kept AS (
    UPDATE consumers SET generation = consumers.generation + 1, project_id = k.project_id,
                         user_id = k.user_id, consumer_type = k.consumer_type
    FROM unnest(:k_ids ::integer[], :k_gens ::integer[], :k_projects ::varchar[],
                :k_users ::varchar[], :k_types ::varchar[])
         AS k(id, generation, project_id, user_id, consumer_type)
    WHERE consumers.id = k.id AND consumers.generation = k.generation
    RETURNING consumers.uuid
), forgotten AS (
    DELETE FROM consumers USING unnest(:f_ids ::integer[], :f_gens ::integer[]) AS f(id, generation)
    WHERE consumers.id = f.id AND consumers.generation = f.generation
    RETURNING consumers.uuid
)
SELECT (SELECT count(*) FROM bumped), (SELECT count(*) FROM replaced),
       ARRAY(SELECT uuid FROM kept UNION ALL SELECT uuid FROM forgotten)
""")


def _apply_in_one_statement(conn: sa.Connection, plan: WritePlan) -> None:
    def column(rows, index):
        return [row[index] for row in rows]

    bumped, deleted, swapped = conn.execute(_IN_ONE_STATEMENT, {
        "p_ids": column(plan.providers, 0), "p_gens": column(plan.providers, 1),
        "replaced": plan.replaced,
        "a_providers": column(plan.allocations, 0), "a_consumers": column(plan.allocations, 1),
        "a_classes": column(plan.allocations, 2), "a_used": column(plan.allocations, 3),
        "u_ids": column(plan.usage, 0), "u_classes": column(plan.usage, 1),
        "u_deltas": column(plan.usage, 2),
        "n_uuids": [r.uuid for r in plan.created],
        "n_projects": [r.project_id for r in plan.created],
        "n_users": [r.user_id for r in plan.created],
        "n_types": [r.consumer_type for r in plan.created],
        "k_ids": [r.id for r in plan.kept], "k_gens": [r.generation for r in plan.kept],
        "k_projects": [r.project_id for r in plan.kept],
        "k_users": [r.user_id for r in plan.kept],
        "k_types": [r.consumer_type for r in plan.kept],
        "f_ids": [r.id for r in plan.forgotten], "f_gens": [r.generation for r in plan.forgotten],
    }).one()
    if bumped != len(plan.providers):
        raise plan.provider_raced()
    if deleted != len(plan.replaced):
        raise plan.rows_raced()
    for row in plan.kept + plan.forgotten:
        if row.uuid not in swapped:
            raise _lost(row)
