"""What every move kind shares: its context, its claim, its record's steps.

A move's claim is what placement holds, kept on its migration record:
the instance's allocations when the move began (every provider of the
source tree it held) and the chosen candidate's allocation request for
the destination. A process that did not start the move (the other host,
or this one after a crash) finishes or undoes it from the record; no
claim is rebuilt from a flavor, except for a record written before the
allocations were kept (see :func:`claim_for`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from oslo_config import cfg

from rtframework import room, scheduler, sharing
from rtframework.compute import errors as cerrors
from rtframework.compute import flavors
from rtframework.compute import values as v
from rtframework.compute.store import ComputeStore
from rtframework.driver import ComputeDriver, InstanceSpec
from rtframework.moves import claims, errors, preconditions, state
from rtframework.placement import errors as perrors
from rtframework.placement import types as t
from rtframework.placement.backend import PlacementBackend

LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class MoveContext:
    """Where moves read and write: configuration, placement, compute records."""

    conf: cfg.ConfigOpts
    backend: PlacementBackend
    store: ComputeStore
    # host -> its driver, when the hosts run in this process (demo, tests);
    # moves then start the guest on the destination and remove the copy
    # that is left behind. Without it, only records and claims change.
    drivers: Mapping[str, ComputeDriver] = field(default_factory=dict)

    def spawn(self, host: str | None, instance: v.Instance, node: str | None,
              flavor: v.Flavor) -> None:
        driver = self.drivers.get(host or "")
        if driver is not None and node is not None:
            driver.spawn(spec(instance, node, flavor))

    def destroy(self, host: str | None, instance: v.Instance, node: str | None) -> None:
        driver = self.drivers.get(host or "")
        if driver is not None and node is not None:
            driver.destroy(spec(instance, node, instance.flavor))


def spec(instance: v.Instance, node: str, flavor: v.Flavor) -> InstanceSpec:
    return InstanceSpec(uuid=instance.uuid, name=instance.name, node=node,
                        resources=dict(flavor.resources), flavor_name=flavor.name)


@dataclass(frozen=True)
class Destination:
    host: str
    node: str
    root_uuid: str


def strategy_for(ctx: MoveContext, migration: v.Migration) -> claims.ClaimStrategy:
    """The strategy the move began with (a config change mid-move is ignored)."""
    return claims.strategy(migration.claim_strategy, ctx.backend, ctx.conf)


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
        shared=_pools(ctx, set(source) & set(dest)),
    )


def _pools(ctx: MoveContext, providers: set[str]) -> frozenset[str]:
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


def advance(
    ctx: MoveContext, migration: v.Migration, new_status: str, **fields: Any
) -> v.Migration:
    """Move the record to ``new_status`` if nobody else moved it first."""
    state.check(migration.uuid, migration.migration_type, migration.status, new_status)
    try:
        updated = ctx.store.update_migration(
            migration.uuid, expected_status=migration.status, status=new_status, **fields
        )
    except cerrors.StateConflict as exc:
        raise errors.ConcurrentUpdate(str(exc)) from exc
    LOG.info("%s %s of instance %s: %s -> %s", migration.migration_type, migration.uuid,
             migration.instance_uuid, migration.status, new_status)
    return updated


def update_instance(ctx: MoveContext, uuid: str, **kwargs: Any) -> v.Instance:
    """A compare-and-swap update of the instance; a lost race is ConcurrentUpdate."""
    try:
        return ctx.store.update_instance(uuid, **kwargs)
    except cerrors.StateConflict as exc:
        raise errors.ConcurrentUpdate(str(exc)) from exc


def lookup_instance(ctx: MoveContext, ref: str) -> v.Instance:
    try:
        instance = ctx.store.lookup_instance(ref)
    except cerrors.ComputeError as exc:
        raise errors.MoveError(str(exc)) from exc
    if instance.vm_state == v.DELETED:
        raise errors.InstanceGone(f"instance {instance.uuid} ({instance.name!r}) is deleted")
    return instance


def get_migration(ctx: MoveContext, uuid: str) -> v.Migration:
    try:
        return ctx.store.get_migration(uuid)
    except cerrors.MigrationNotFound as exc:
        raise errors.MoveError(str(exc)) from exc


def get_migration_of(ctx: MoveContext, uuid: str, migration_type: str) -> v.Migration:
    """A migration that must be of ``migration_type``."""
    migration = get_migration(ctx, uuid)
    if migration.migration_type != migration_type:
        raise errors.MoveError(f"migration {migration.uuid} is {_a(migration.migration_type)}, "
                               f"not {_a(migration_type)}")
    return migration


def _a(kind: str) -> str:
    return f"{'an' if kind[0] in 'aeiou' else 'a'} {kind}"


def begin(
    ctx: MoveContext,
    instance: v.Instance,
    *,
    migration_type: str,
    task_state: str,
    new_flavor: v.Flavor,
    claim_strategy: str,
    expected_vm_states: frozenset[str] = frozenset({v.ACTIVE}),
) -> tuple[v.Instance, v.Migration]:
    """Take the instance for a move (one actor wins) and record the migration."""
    if instance.task_state is not None:
        raise errors.ConcurrentUpdate(
            f"instance {instance.uuid} is busy ({instance.task_state}); try again later")
    if instance.vm_state not in expected_vm_states:
        raise errors.MoveError(
            f"instance {instance.uuid} is {instance.vm_state}; a {migration_type} needs "
            f"{' or '.join(sorted(expected_vm_states))}")
    taken = update_instance(
        ctx, instance.uuid, expected_vm_state=instance.vm_state, expected_task_state=None,
        expected_host=instance.host, task_state=task_state,
    )
    # Read once the instance is taken: nothing else changes its claim now
    # (heal leaves an instance with a task state alone).
    held = ctx.backend.get_consumer_allocations(instance.uuid).allocations
    migration = ctx.store.create_migration(
        instance.uuid, migration_type,
        source_host=instance.host, source_node=instance.node,
        old_flavor=instance.flavor, new_flavor=new_flavor,
        claim_strategy=claim_strategy, status=state.INITIAL[migration_type],
        source_allocations=claims.normalized(held),
    )
    LOG.info("%s %s of instance %s from %s/%s started", migration_type, migration.uuid,
             instance.uuid, instance.host, instance.node)
    return taken, migration


def validate_flavor(ctx: MoveContext, flavor: v.Flavor) -> None:
    """Refuse a new flavor placement would refuse (no resources, amounts
    below 1, a class placement does not know), before anything is written."""
    why = flavors.problem(flavor)
    if why is not None:
        raise errors.MoveError(why)
    known = set(ctx.backend.list_resource_classes())
    unknown = sorted(set(flavor.resources) - known)
    if unknown:
        raise errors.MoveError(f"flavor {flavor.name!r}: unknown resource class "
                               f"{', '.join(unknown)}")


def nodes_of(ctx: MoveContext, host: str) -> list[v.ComputeNode]:
    nodes = ctx.store.list_compute_nodes(host=host)
    if not nodes:
        raise errors.MoveError(f"host {host!r} reports no compute node")
    return nodes


def claim_destination(
    ctx: MoveContext,
    migration: v.Migration,
    *,
    to_host: str | None,
    exclude_host: str | None,
    strategy: claims.ClaimStrategy,
    reason: str,
    operation: str,
    failure_status: str = state.ERROR,
) -> tuple[v.Migration, Destination]:
    """Pick a destination and hold the move's double claim on it; if none
    can be had the move is rolled back into ``failure_status`` and the
    error raised.

    Each candidate is written into the record before it is claimed, so a
    crash in between leaves a record naming the destination the move may
    hold (recovery can undo it). A candidate lost to a race makes way for
    the next one.
    """
    try:
        return _claim_destination(ctx, migration, to_host, exclude_host, strategy, reason,
                                  operation)
    except Exception:
        fail(ctx, migration.uuid, status=failure_status, reason=f"{reason}: no destination")
        raise


def _claim_destination(
    ctx: MoveContext,
    migration: v.Migration,
    to_host: str | None,
    exclude_host: str | None,
    strategy: claims.ClaimStrategy,
    reason: str,
    operation: str,
) -> tuple[v.Migration, Destination]:
    if to_host is not None and to_host == exclude_host:
        raise errors.MoveError(
            f"instance {migration.instance_uuid} is on host {to_host!r} already")
    resources = migration.new_flavor.resources
    if to_host:
        # A host the caller named: its own trees' candidates.
        nodes = nodes_of(ctx, to_host)
        found = [c for n in nodes
                 for c in scheduler.candidates(ctx.backend, resources, in_tree=n.uuid)]
        if not found:
            raise scheduler.NoValidHost(
                f"{migration.migration_type} of instance {migration.instance_uuid}: host "
                f"{to_host!r} cannot hold {_format(resources)} ("
                + "; ".join(f"node {n.nodename}: {_why(ctx, n.uuid, resources)}" for n in nodes)
                + ")")
    else:
        # The scheduler skips hosts the preconditions table refuses (down,
        # disabled, still cleaning up after this instance).
        instance = ctx.store.get_instance(migration.instance_uuid)
        nodes = ctx.store.list_compute_nodes()
        refused = {host for host in {n.host for n in nodes}
                   if preconditions.destination_problem(ctx.conf, ctx.store, operation,
                                                        instance, host) is not None}
        excluded = {n.uuid for n in nodes if n.host == exclude_host or n.host in refused}
        found = scheduler.candidates(ctx.backend, resources, exclude_roots=excluded)
    node_by_root: Mapping[str, v.ComputeNode] = {n.uuid: n for n in nodes}
    # Trees that are not compute nodes (sharing providers) cannot host a guest.
    found = [c for c in found if c.root_uuid in node_by_root]
    current = {"migration": migration}

    def claim(candidate: scheduler.Candidate) -> Destination:
        node = node_by_root[candidate.root_uuid]
        dest = Destination(node.host, node.nodename, node.uuid)
        wanted = claims.normalized(candidate.allocations)
        record = current["migration"]
        if (record.dest_host, record.dest_node, record.dest_allocations) != (
                dest.host, dest.node, wanted):
            try:
                record = ctx.store.update_migration(
                    record.uuid, expected_status=record.status,
                    dest_host=dest.host, dest_node=dest.node, dest_allocations=wanted)
            except cerrors.StateConflict as exc:
                raise errors.ConcurrentUpdate(str(exc)) from exc
            current["migration"] = record
        strategy.start(claim_for(ctx, record), reason=reason)
        return dest

    _, dest = scheduler.claim_first(
        found, claim, f"{migration.migration_type} of instance {migration.instance_uuid}")
    return current["migration"], dest


def _format(resources: Mapping[str, int]) -> str:
    return ", ".join(f"{rc}={n}" for rc, n in sorted(resources.items()))


def _why(ctx: MoveContext, root_uuid: str, resources: Mapping[str, int]) -> str:
    try:
        return room.explain(ctx.backend, root_uuid, resources)
    except perrors.ProviderNotFound:
        return "not in placement"


def fail(
    ctx: MoveContext,
    migration_uuid: str,
    *,
    status: str = state.ERROR,
    reason: str,
) -> v.Migration:
    """Roll a move back: allocations end on the source only (or nowhere if
    the instance was deleted), the instance is released, the record closed."""
    migration = get_migration(ctx, migration_uuid)
    if state.is_final(migration.status):
        return migration
    strategy_for(ctx, migration).revert(claim_for(ctx, migration), reason=reason)
    instance = ctx.store.get_instance(migration.instance_uuid)
    if migration.dest_host and migration.dest_host != migration.source_host:
        # The destination may have started the guest already (a live
        # migration does at its start, a resize at its finish).
        ctx.destroy(migration.dest_host, instance, migration.dest_node)
    if instance.vm_state != v.DELETED:
        # A step may have failed after the record already moved to the
        # destination (and before the status said so): the allocations are
        # back on the source now, so the record must be too.
        if not restore_on_source(ctx, migration, instance):
            update_instance(ctx, instance.uuid, expected_task_state=instance.task_state,
                            task_state=None)
    return advance(ctx, migration, status)


def restore_on_source(ctx: MoveContext, migration: v.Migration, instance: v.Instance) -> bool:
    """Put a live instance record (and its guest) back on the migration's
    source with the old flavor; False when it is there already."""
    if instance.host == migration.source_host and instance.vm_state != v.RESIZED:
        return False
    if migration.source_host != migration.dest_host:
        ctx.destroy(migration.dest_host, instance, migration.dest_node)
    update_instance(
        ctx, instance.uuid, expected_vm_state=instance.vm_state,
        expected_host=instance.host, host=migration.source_host,
        node=migration.source_node, flavor=migration.old_flavor,
        vm_state=v.ACTIVE, task_state=None,
    )
    ctx.spawn(migration.source_host, instance, migration.source_node, migration.old_flavor)
    return True
