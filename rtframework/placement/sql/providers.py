"""Resource providers: create, read, list, re-parent and rename, delete.

A provider row carries its parent and its root; moving a provider under
a new parent moves its whole subtree to the new root.
"""

from __future__ import annotations

import logging
import uuid as uuidlib

import sqlalchemy as sa

from rtframework import db
from rtframework.placement import errors, validation
from rtframework.placement import types as t
from rtframework.placement.sql import models as m
from rtframework.placement.sql import queries
from rtframework.placement.sql.dberrors import reason, translated

LOG = logging.getLogger(__name__)


def create(engine: sa.Engine, name: str, uuid: str | None = None,
           parent_uuid: str | None = None) -> t.ResourceProvider:
    uuid = validation.normalize_uuid(
        str(uuidlib.uuid4()) if uuid is None else uuid, "provider uuid")
    parent_uuid = validation.normalize_optional_uuid(parent_uuid, "parent provider uuid")
    validation.check_provider_name(name)
    if parent_uuid is not None and parent_uuid == uuid:
        raise errors.InvalidRequest(f"provider {uuid} cannot be its own parent")
    rp = m.resource_providers
    try:
        with db.transaction(engine) as conn:
            # A missing parent is reported before a taken name or uuid,
            # as Placement does.
            parent = queries.provider_row(conn, parent_uuid) if parent_uuid else None
            _check_unique(conn, name=name, uuid=uuid)
            new_id = conn.execute(
                sa.insert(rp).values(
                    uuid=uuid, name=name, generation=0,
                    parent_provider_id=parent.id if parent else None,
                )
            ).inserted_primary_key[0]
            root_id = _root_id(conn, parent.id) if parent else new_id
            conn.execute(
                sa.update(rp).where(rp.c.id == new_id).values(root_provider_id=root_id)
            )
            created = queries.to_provider(queries.provider_row(conn, uuid))
    except sa.exc.IntegrityError as exc:
        # Lost a race with a creator of the same name or uuid.
        with translated(), db.read(engine) as conn:
            _check_unique(conn, name=name, uuid=uuid)
        raise errors.Conflict(
            f"could not create provider {uuid} ({name}): {reason(exc)}") from exc
    except sa.exc.SQLAlchemyError as exc:
        with translated():
            raise exc
    LOG.info("created resource provider %s (%s), parent %s", uuid, name, parent_uuid)
    return created


def _check_unique(conn: sa.Connection, *, name: str, uuid: str | None,
                  ignore_id: int | None = None) -> None:
    rp = m.resource_providers
    if uuid is not None and conn.execute(
        sa.select(rp.c.id).where(rp.c.uuid == uuid)
    ).first():
        raise errors.DuplicateUUID(f"a resource provider with uuid {uuid} already exists")
    other = conn.execute(sa.select(rp.c.id, rp.c.uuid).where(rp.c.name == name)).first()
    if other is not None and other.id != ignore_id:
        raise errors.DuplicateName(
            f"a resource provider named {name!r} already exists ({other.uuid})"
        )


def _root_id(conn: sa.Connection, provider_id: int) -> int:
    rp = m.resource_providers
    return conn.execute(
        sa.select(rp.c.root_provider_id).where(rp.c.id == provider_id)
    ).scalar_one()


def get(engine: sa.Engine, uuid: str) -> t.ResourceProvider:
    uuid = validation.normalize_uuid(uuid, "provider uuid")
    with translated(), db.read(engine) as conn:
        return queries.to_provider(queries.provider_row(conn, uuid))


def list_matching(engine: sa.Engine,
                  query: t.ProviderQuery | None = None) -> list[t.ResourceProvider]:
    query = validation.provider_query(query)
    rp = m.resource_providers
    stmt = queries.provider_select()
    if query.uuid is not None:
        stmt = stmt.where(rp.c.uuid == query.uuid)
    if query.name is not None:
        stmt = stmt.where(rp.c.name == query.name)
    if query.in_tree is not None:
        tree = rp.alias("tree")
        stmt = stmt.where(rp.c.root_provider_id == (
            sa.select(tree.c.root_provider_id).where(tree.c.uuid == query.in_tree)
            .scalar_subquery()
        ))
    stmt = stmt.where(
        *queries.member_of_clause(rp.c.id, query.member_of),
        *queries.traits_clause(rp.c.id, query.required_traits, query.forbidden_traits),
        *(queries.has_room_clause(rp.c.id, rc, amount)
          for rc, amount in sorted(query.resources.items())),
    )
    with translated(), db.read(engine) as conn:
        queries.check_known_names(conn, query.resources,
                                  query.required_traits | query.forbidden_traits)
        return [queries.to_provider(row) for row in conn.execute(stmt)]


def update(engine: sa.Engine, uuid: str, *, name: str,
           parent_uuid: str | None = None, detach: bool = False) -> t.ResourceProvider:
    """Rename a provider, and move it (with its subtree) under a new parent
    or, with ``detach``, out of its tree as a root of its own."""
    uuid = validation.normalize_uuid(uuid, "provider uuid")
    parent_uuid = validation.normalize_optional_uuid(parent_uuid, "parent provider uuid")
    validation.check_provider_name(name)
    rp = m.resource_providers
    with translated(), db.transaction(engine) as conn:
        row = queries.provider_row(conn, uuid)
        values: dict = {"name": name}
        if detach and parent_uuid is not None:
            raise errors.InvalidRequest(
                f"provider {uuid}: detach and a new parent {parent_uuid} both asked")
        if detach and row.parent_uuid is not None:
            values["parent_provider_id"] = None
            conn.execute(sa.update(rp).where(rp.c.id.in_(_subtree_ids(conn, row.id)))
                         .values(root_provider_id=row.id))
        # The new parent is checked before the name, as Placement does.
        if parent_uuid is not None and parent_uuid != row.parent_uuid:
            parent = queries.provider_row(conn, parent_uuid)
            subtree = _subtree_ids(conn, row.id)
            # The new parent must not sit below the provider itself.
            if parent.id in subtree:
                raise errors.InvalidRequest(
                    f"provider {parent_uuid} is {uuid} or one of its descendants and "
                    f"cannot become its parent"
                )
            values["parent_provider_id"] = parent.id
            new_root = _root_id(conn, parent.id)
            conn.execute(sa.update(rp).where(rp.c.id.in_(subtree))
                         .values(root_provider_id=new_root))
        _check_unique(conn, name=name, uuid=None, ignore_id=row.id)
        conn.execute(sa.update(rp).where(rp.c.id == row.id).values(**values))
        return queries.to_provider(queries.provider_row(conn, uuid))


def _subtree_ids(conn: sa.Connection, provider_id: int) -> list[int]:
    rp = m.resource_providers
    found, frontier = [provider_id], [provider_id]
    while frontier:
        frontier = list(conn.execute(
            sa.select(rp.c.id).where(rp.c.parent_provider_id.in_(frontier))
        ).scalars())
        found.extend(frontier)
    return found


def delete(engine: sa.Engine, uuid: str) -> None:
    """Delete a provider with no children and no allocations."""
    uuid = validation.normalize_uuid(uuid, "provider uuid")
    rp, a = m.resource_providers, m.allocations
    with translated(), db.transaction(engine) as conn:
        row = queries.provider_row(conn, uuid)
        # Lock the row first so no allocation write slips in between the
        # checks and the delete.
        conn.execute(sa.update(rp).where(rp.c.id == row.id)
                     .values(generation=rp.c.generation + 1))
        children = conn.execute(
            sa.select(sa.func.count()).select_from(rp).where(rp.c.parent_provider_id == row.id)
        ).scalar_one()
        if children:
            raise errors.CannotDeleteParent(
                f"resource provider {queries.label(row)} has {children} child provider(s)"
            )
        consumers = conn.execute(
            sa.select(sa.func.count(sa.distinct(a.c.consumer_id)))
            .where(a.c.resource_provider_id == row.id)
        ).scalar_one()
        if consumers:
            raise errors.ProviderInUse(
                f"resource provider {queries.label(row)} has allocations of "
                f"{consumers} consumer(s)"
            )
        for table in (m.inventories, m.provider_traits, m.provider_aggregates):
            conn.execute(sa.delete(table).where(table.c.resource_provider_id == row.id))
        # A root references itself; clear that before the row goes.
        conn.execute(sa.update(rp).where(rp.c.id == row.id).values(root_provider_id=None))
        conn.execute(sa.delete(rp).where(rp.c.id == row.id))
    LOG.info("deleted resource provider %s", queries.label(row))
