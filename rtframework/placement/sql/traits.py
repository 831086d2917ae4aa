"""Traits: the standard ones plus the CUSTOM_ ones stored here, and the
traits of each provider."""

from __future__ import annotations

import sqlalchemy as sa

from rtframework import db
from rtframework.placement import errors, validation
from rtframework.placement import types as t
from rtframework.placement.sql import models as m
from rtframework.placement.sql import queries
from rtframework.placement.sql.dberrors import translated


def list_all(engine: sa.Engine, prefix: str | None = None,
             associated: bool | None = None) -> list[str]:
    with translated(), db.read(engine) as conn:
        custom = set(conn.execute(sa.select(m.traits.c.name)).scalars())
        used = set() if associated is None else set(conn.execute(
            sa.select(m.provider_traits.c.trait).distinct()).scalars())
    names = validation.STANDARD_TRAITS | custom
    return sorted(n for n in names if (prefix is None or n.startswith(prefix))
                  and (associated is None or (n in used) == associated))


def ensure(engine: sa.Engine, name: str) -> None:
    validation.check_trait_name(name)
    if name in validation.STANDARD_TRAITS:
        return
    with translated(), db.transaction(engine) as conn:
        queries.insert_ignoring_duplicates(conn, m.traits, [{"name": name}])


def delete(engine: sa.Engine, name: str) -> None:
    """Delete a custom trait no provider has."""
    validation.check_custom_trait_name(name)
    pt = m.provider_traits
    with translated(), db.transaction(engine) as conn:
        if not queries.custom_names(conn, m.traits, [name]):
            raise errors.TraitNotFound(f"trait {name} not found")
        users = conn.execute(
            sa.select(sa.func.count()).select_from(pt).where(pt.c.trait == name)
        ).scalar_one()
        if users:
            raise errors.TraitInUse(f"trait {name} is a trait of {users} provider(s)")
        conn.execute(sa.delete(m.traits).where(m.traits.c.name == name))


def of_provider(engine: sa.Engine, uuid: str) -> t.ProviderTraits:
    uuid = validation.normalize_uuid(uuid, "provider uuid")
    with translated(), db.read(engine) as conn:
        row = queries.provider_row(conn, uuid)
        traits = queries.traits_of(conn, [row.id])[row.id]
        return t.ProviderTraits(generation=row.generation, traits=traits)


def set_of_provider(engine: sa.Engine, uuid: str, generation: int,
                    traits: frozenset[str]) -> int:
    """Replace the provider's traits; the new generation."""
    uuid = validation.normalize_uuid(uuid, "provider uuid")
    validation.check_generation(generation, f"generation of provider {uuid}")
    traits = validation.trait_set(traits)
    pt = m.provider_traits
    with translated(), db.transaction(engine) as conn:
        row = queries.provider_row(conn, uuid)
        # A stale generation is reported before an unknown trait, and a
        # write that changes nothing keeps the generation, as Placement
        # does; the CAS below still guards a real change.
        queries.keep_generation(row, generation)
        queries.require_traits(conn, traits, f"traits of provider {queries.label(row)}")
        if queries.traits_of(conn, [row.id])[row.id] == traits:
            return generation
        new_gen = queries.bump_generation(conn, row, generation)
        conn.execute(sa.delete(pt).where(pt.c.resource_provider_id == row.id))
        if traits:
            conn.execute(sa.insert(pt), [
                {"resource_provider_id": row.id, "trait": name} for name in sorted(traits)
            ])
        return new_gen
