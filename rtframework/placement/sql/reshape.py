"""Reshape: providers' inventories and consumers' allocations replaced in
one transaction, so allocations can move with the inventory they use
(from a compute node to its new NUMA children, say).

Three steps, as Placement takes them: each provider first gets the union
of its current and its new inventory (a write only if that changes it),
then the allocations are written, then each provider gets exactly its new
inventory, when classes left out no longer have allocations to refuse
their removal.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import sqlalchemy as sa

from rtframework import db
from rtframework.placement import types as t
from rtframework.placement import validation
from rtframework.placement.sql import allocations as alloc
from rtframework.placement.sql import inventories, queries
from rtframework.placement.sql.dberrors import translated


def reshape(engine: sa.Engine, new_inventories: Mapping[str, t.ProviderInventories],
            writes: Sequence[t.AllocationWrite]) -> None:
    checked: dict[str, t.ProviderInventories] = {}
    for uuid, given in new_inventories.items():
        uuid = validation.normalize_uuid(uuid, "provider uuid")
        validation.check_generation(given.generation, f"generation of provider {uuid}")
        checked[uuid] = t.ProviderInventories(
            generation=given.generation,
            inventories=validation.check_inventories(uuid, given.inventories))
    writes = validation.allocation_writes(writes)
    with translated(), db.transaction(engine) as conn:
        for uuid, given in sorted(checked.items()):
            row = queries.provider_row(conn, uuid)
            current = queries.inventories_of(conn, [row.id]).get(row.id, {})
            union = {**current, **given.inventories}
            if union != current:
                inventories.write(conn, uuid, given.generation, union, replace=True)
            else:
                queries.keep_generation(row, given.generation)
        alloc.write_once(conn, writes)
        for uuid, given in sorted(checked.items()):
            generation = queries.provider_row(conn, uuid).generation
            inventories.write(conn, uuid, generation, dict(given.inventories), replace=True)
