"""Resource classes: the standard ones plus the CUSTOM_ ones stored here."""

from __future__ import annotations

import sqlalchemy as sa

from rtframework import db
from rtframework.placement import errors, validation
from rtframework.placement.sql import models as m
from rtframework.placement.sql import queries
from rtframework.placement.sql.dberrors import translated


def list_all(engine: sa.Engine) -> list[str]:
    with translated(), db.read(engine) as conn:
        custom = conn.execute(sa.select(m.resource_classes.c.name)).scalars()
        return sorted(validation.STANDARD_CLASSES | set(custom))


def ensure(engine: sa.Engine, name: str) -> None:
    validation.check_resource_class_name(name)
    if name in validation.STANDARD_CLASSES:
        return
    with translated(), db.transaction(engine) as conn:
        queries.insert_ignoring_duplicates(conn, m.resource_classes, [{"name": name}])


def rename(engine: sa.Engine, name: str, new_name: str) -> None:
    """Rename a custom class everywhere it is used, in one transaction."""
    validation.check_custom_resource_class_name(name)
    validation.check_custom_resource_class_name(new_name)
    rc, inv, a = m.resource_classes, m.inventories, m.allocations
    with translated(), db.transaction(engine) as conn:
        if not queries.custom_names(conn, rc, [name]):
            raise errors.ResourceClassNotFound(f"resource class {name} not found")
        if name == new_name:
            return
        if queries.custom_names(conn, rc, [new_name]):
            raise errors.Conflict(f"resource class {new_name} already exists")
        conn.execute(sa.update(rc).where(rc.c.name == name).values(name=new_name))
        conn.execute(sa.update(inv).where(inv.c.resource_class == name)
                     .values(resource_class=new_name))
        conn.execute(sa.update(a).where(a.c.resource_class == name)
                     .values(resource_class=new_name))


def delete(engine: sa.Engine, name: str) -> None:
    """Delete a custom class no provider has inventory of."""
    validation.check_custom_resource_class_name(name)
    rc, inv = m.resource_classes, m.inventories
    with translated(), db.transaction(engine) as conn:
        if not queries.custom_names(conn, rc, [name]):
            raise errors.ResourceClassNotFound(f"resource class {name} not found")
        users = conn.execute(
            sa.select(sa.func.count()).select_from(inv).where(inv.c.resource_class == name)
        ).scalar_one()
        if users:
            raise errors.ResourceClassInUse(
                f"resource class {name} is in the inventory of {users} provider(s)"
            )
        conn.execute(sa.delete(rc).where(rc.c.name == name))
