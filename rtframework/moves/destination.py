"""Choosing a move's destination and holding the move's claim on it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from rtframework import room, scheduler
from rtframework.compute import errors as cerrors
from rtframework.compute import flavors
from rtframework.compute import values as v
from rtframework.moves import claims, errors, preconditions, state
from rtframework.moves.context import MoveContext
from rtframework.moves.record_claims import claim_for, pools
from rtframework.moves.undo import fail
from rtframework.placement import errors as perrors
from rtframework.placement import types as t


@dataclass(frozen=True)
class Destination:
    host: str
    node: str
    root_uuid: str


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
        found, nodes = _candidates(ctx, migration, to_host, exclude_host, operation)
        return _claim_first(ctx, migration, found, nodes, strategy, reason)
    except Exception:
        fail(ctx, migration.uuid, status=failure_status, reason=f"{reason}: no destination")
        raise


def _candidates(
    ctx: MoveContext, migration: v.Migration, to_host: str | None, exclude_host: str | None,
    operation: str,
) -> tuple[list[scheduler.Candidate], list[v.ComputeNode]]:
    """Where the move's new flavor fits (on ``to_host`` when named), and the
    compute nodes those candidates are judged among."""
    if to_host is not None and to_host == exclude_host:
        raise errors.MoveError(
            f"instance {migration.instance_uuid} is on host {to_host!r} already")
    resources = migration.new_flavor.resources
    kept = kept_in_pools(ctx, migration)
    if to_host:
        # A host the caller named: its own trees' candidates.
        nodes = nodes_of(ctx, to_host)
        found = [c for n in nodes
                 for c in scheduler.candidates(ctx.backend, resources, in_tree=n.uuid,
                                               kept=kept)]
        if not found:
            raise scheduler.NoValidHost(
                f"{migration.migration_type} of instance {migration.instance_uuid}: host "
                f"{to_host!r} cannot hold {t.format_resources(resources)} ("
                + "; ".join(f"node {n.nodename}: {_why(ctx, n.uuid, resources, kept)}"
                            for n in nodes)
                + ")")
        return found, nodes
    # The scheduler skips hosts the preconditions table refuses (down,
    # disabled, still cleaning up after this instance).
    instance = ctx.store.get_instance(migration.instance_uuid)
    nodes = ctx.store.list_compute_nodes()
    refused = {host for host in {n.host for n in nodes}
               if preconditions.destination_problem(ctx.conf, ctx.store, operation,
                                                    instance, host) is not None}
    excluded = {n.uuid for n in nodes if n.host == exclude_host or n.host in refused}
    return scheduler.candidates(ctx.backend, resources, exclude_roots=excluded,
                                kept=kept), nodes


def kept_in_pools(ctx: MoveContext, migration: v.Migration) -> dict[str, dict[str, int]]:
    """What the instance holds on storage pools when the move began: the
    disk there does not move, so a destination sharing the pool needs
    only its growth."""
    source = migration.source_allocations or {}
    return {p: dict(source[p]) for p in pools(ctx, set(source))}


def _claim_first(
    ctx: MoveContext, migration: v.Migration, found: list[scheduler.Candidate],
    nodes: list[v.ComputeNode], strategy: claims.ClaimStrategy, reason: str,
) -> tuple[v.Migration, Destination]:
    """Hold the claim on the first candidate that can still be had."""
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


def _why(ctx: MoveContext, root_uuid: str, resources: Mapping[str, int],
         kept: Mapping[str, Mapping[str, int]]) -> str:
    try:
        return room.explain(ctx.backend, root_uuid, resources, held=kept)
    except perrors.ProviderNotFound:
        return "not in placement"
