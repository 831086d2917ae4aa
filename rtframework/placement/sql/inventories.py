"""The inventories of a provider: read, replace all, set one, delete one.

Every write bumps the provider's generation first (compare-and-swap): it
locks the provider row, so usage read afterwards is not raced by an
allocation write. Inventory may shrink below usage (logged), but a class
with allocations cannot be removed.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

import sqlalchemy as sa

from rtframework import db
from rtframework.placement import errors, validation
from rtframework.placement import types as t
from rtframework.placement.sql import models as m
from rtframework.placement.sql import queries
from rtframework.placement.sql.dberrors import translated

LOG = logging.getLogger(__name__)


def of_provider(engine: sa.Engine, uuid: str) -> t.ProviderInventories:
    uuid = validation.normalize_uuid(uuid, "provider uuid")
    with translated(), db.read(engine) as conn:
        row = queries.provider_row(conn, uuid)
        invs = queries.inventories_of(conn, [row.id]).get(row.id, {})
        return t.ProviderInventories(generation=row.generation, inventories=invs)


def replace_all(engine: sa.Engine, uuid: str, generation: int,
                inventories: Mapping[str, t.Inventory]) -> int:
    """The provider's inventory becomes exactly ``inventories``."""
    uuid = validation.normalize_uuid(uuid, "provider uuid")
    validation.check_generation(generation, f"generation of provider {uuid}")
    inventories = validation.check_inventories(uuid, inventories)
    with translated(), db.transaction(engine) as conn:
        return write(conn, uuid, generation, inventories, replace=True)


def set_one(engine: sa.Engine, uuid: str, generation: int, resource_class: str,
            inventory: t.Inventory) -> int:
    """Create or change the inventory of one class; the others stay."""
    uuid = validation.normalize_uuid(uuid, "provider uuid")
    validation.check_generation(generation, f"generation of provider {uuid}")
    inventories = validation.check_inventories(uuid, {resource_class: inventory})
    with translated(), db.transaction(engine) as conn:
        return write(conn, uuid, generation, inventories, replace=False)


def delete_one(engine: sa.Engine, uuid: str, generation: int, resource_class: str) -> int:
    uuid = validation.normalize_uuid(uuid, "provider uuid")
    validation.check_generation(generation, f"generation of provider {uuid}")
    validation.check_resource_class_name(resource_class)
    with translated(), db.transaction(engine) as conn:
        row = queries.provider_row(conn, uuid)
        current = queries.inventories_of(conn, [row.id]).get(row.id, {})
        if resource_class not in current:
            raise errors.NotFound(
                f"provider {queries.label(row)} has no inventory of {resource_class}"
            )
        new_gen = queries.bump_generation(conn, row, generation)
        _remove_classes(conn, row, [resource_class])
        return new_gen


def write(conn: sa.Connection, uuid: str, generation: int,
          inventories: dict[str, t.Inventory], *, replace: bool) -> int:
    """Set the provider's inventory of each class given (and, with
    ``replace``, remove the others) in the caller's transaction; the
    new generation."""
    row = queries.provider_row(conn, uuid)
    # CAS first: it locks the provider row, so the reads below are not
    # raced by an allocation write; and a stale generation is reported
    # before an unknown class, as Placement does.
    new_gen = queries.bump_generation(conn, row, generation)
    queries.require_classes(conn, inventories, f"inventory of provider {queries.label(row)}")
    current = queries.inventories_of(conn, [row.id]).get(row.id, {})
    usages = queries.usages_of(conn, [row.id])
    if replace:
        _remove_classes(conn, row, sorted(set(current) - set(inventories)))
    inv_t = m.inventories
    for rc, inv in sorted(inventories.items()):
        used = usages.get((row.id, rc), 0)
        if used > inv.capacity:
            LOG.warning(
                "inventory of %s on provider %s shrinks below usage: used %d > capacity %s",
                rc, queries.label(row), used, inv.capacity,
            )
        values = {
            "total": inv.total, "reserved": inv.reserved, "min_unit": inv.min_unit,
            "max_unit": inv.max_unit, "step_size": inv.step_size,
            "allocation_ratio": float(inv.allocation_ratio),
        }
        if rc in current:
            if current[rc] != inv:
                conn.execute(sa.update(inv_t).where(
                    inv_t.c.resource_provider_id == row.id, inv_t.c.resource_class == rc,
                ).values(**values))
        else:
            conn.execute(sa.insert(inv_t).values(
                resource_provider_id=row.id, resource_class=rc, used=queries.allocated(row.id, rc),
                **values))
    return new_gen


def _remove_classes(conn: sa.Connection, row, classes: Sequence[str]) -> None:
    if not classes:
        return
    inv, a = m.inventories, m.allocations
    in_use = conn.execute(
        sa.select(a.c.resource_class, sa.func.sum(a.c.used))
        .where(a.c.resource_provider_id == row.id, a.c.resource_class.in_(list(classes)))
        .group_by(a.c.resource_class)
    ).all()
    if in_use:
        detail = ", ".join(f"{rc} (used {int(used)})" for rc, used in sorted(in_use))
        raise errors.InventoryInUse(
            f"cannot remove inventory of {detail} from provider {queries.label(row)}: "
            f"allocations exist"
        )
    conn.execute(sa.delete(inv).where(
        inv.c.resource_provider_id == row.id, inv.c.resource_class.in_(list(classes))
    ))
