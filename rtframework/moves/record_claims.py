"""The claim a migration record keeps, and the strategy it began with.

A move's claim is what placement holds, kept on its migration record:
the instance's allocations when the move began (every provider of the
source tree it held) and the chosen candidate's allocation request for
the destination. A process that did not start the move (the other host,
or this one after a crash) finishes or undoes it from the record; no
claim is rebuilt from a flavor, except for a record written before the
allocations were kept (see :func:`claim_for`).
"""

from __future__ import annotations

from collections.abc import Mapping

from rtframework import sharing
from rtframework.compute import values as v
from rtframework.moves import claims
from rtframework.moves.context import MoveContext
from rtframework.placement import errors as perrors
from rtframework.placement import types as t


def strategy_for(ctx: MoveContext, migration: v.Migration) -> claims.ClaimStrategy:
    """The strategy the move began with (a config change mid-move is ignored)."""
    return claims.strategy(migration.claim_strategy, ctx.backend, ctx.conf)


def keep_destination(ctx: MoveContext, migration: v.Migration, reason: str) -> None:
    """The move's claim step that keeps only the destination (confirm)."""
    strategy_for(ctx, migration).confirm(claim_for(ctx, migration), reason=reason)


def keep_source(ctx: MoveContext, migration: v.Migration, reason: str) -> None:
    """The move's claim step that keeps only the source (revert, roll back)."""
    strategy_for(ctx, migration).revert(claim_for(ctx, migration), reason=reason)


def claim_for(ctx: MoveContext, migration: v.Migration) -> claims.MoveClaim:
    """The claim of ``migration``: the allocations its record keeps."""
    instance = ctx.store.get_instance(migration.instance_uuid)
    source, dest = migration.source_allocations, migration.dest_allocations
    if source is None:
        source, dest = _legacy_halves(ctx, migration)
    source, dest = claims.normalized(source), claims.normalized(dest or {})
    return claims.MoveClaim(
        instance_uuid=instance.uuid,
        migration_uuid=migration.uuid,
        project_id=instance.project_id,
        user_id=instance.user_id,
        source=source,
        dest=dest,
        shared=pools(ctx, set(source) & set(dest)),
    )


def pools(ctx: MoveContext, providers: set[str]) -> frozenset[str]:
    """Which of ``providers`` are storage pools (sharing providers)."""
    pools = set()
    for provider in providers:
        try:
            traits = ctx.backend.get_provider_traits(provider).traits
        except perrors.ProviderNotFound:
            continue
        if sharing.SHARING_TRAIT in traits:
            pools.add(provider)
    return frozenset(pools)


def _legacy_halves(ctx: MoveContext, migration: v.Migration) -> tuple[claims.Alloc, claims.Alloc]:
    """Both halves of a record written before compute schema 0003 kept
    them: each flavor class on the root of the node's tree if the root has
    it, else on the first child (by uuid) that offers it, which is where
    claims were written then."""
    source_root = ctx.store.node_root_uuid(migration.source_host, migration.source_node)
    dest: claims.Alloc = {}
    if migration.dest_host and migration.dest_node:
        dest_root = ctx.store.node_root_uuid(migration.dest_host, migration.dest_node)
        dest = _in_tree(ctx, dest_root, migration.new_flavor.resources)
    return _in_tree(ctx, source_root, migration.old_flavor.resources), dest


def _in_tree(ctx: MoveContext, root_uuid: str, resources: Mapping[str, int]) -> claims.Alloc:
    try:
        on_root = ctx.backend.get_inventories(root_uuid).inventories
    except perrors.ProviderNotFound:
        return claims.on_root(root_uuid, resources)
    placed: dict[str, dict[str, int]] = {root_uuid: {}}
    missing = {}
    for rc, amount in resources.items():
        (placed[root_uuid] if rc in on_root else missing)[rc] = amount
    if missing:
        tree = ctx.backend.list_providers(t.ProviderQuery(in_tree=root_uuid))
        for provider in sorted(tree, key=lambda p: p.uuid):
            if provider.uuid == root_uuid:
                continue
            offered = ctx.backend.get_inventories(provider.uuid).inventories
            for rc in [rc for rc in missing if rc in offered]:
                placed.setdefault(provider.uuid, {})[rc] = missing.pop(rc)
        placed[root_uuid].update(missing)
    return claims.normalized(placed)
