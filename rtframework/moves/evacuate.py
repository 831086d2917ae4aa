"""Evacuation: rebuild an instance of a down host somewhere else.

The source is down, so it cannot give anything back: the instance holds
both sides, I:{S: f, D: f}, whatever ``move_claim_strategy`` says (there
is nobody to hand a migration consumer back to). The record then waits in
``finished`` until the source host returns; its recovery
(:func:`rtframework.moves.recovery.reconcile`) sees an evacuation whose
source is itself, removes the half on its own providers and closes the
record (``done``). That is an owned rule, never a general heal.
"""

from __future__ import annotations

import logging

from rtframework.compute import values as v
from rtframework.moves import errors, preconditions, record_claims, records, resize, state
from rtframework.moves.claims import DoubledClaim
from rtframework.moves.context import MoveContext
from rtframework.moves.start import start_move

LOG = logging.getLogger(__name__)

TASK_REBUILDING = "rebuilding"


def start(ctx: MoveContext, instance_ref: str, *, to_host: str | None = None) -> v.Migration:
    """Check the source is down, then hold the claim on a destination."""
    instance = records.lookup_instance(ctx, instance_ref)
    return start_move(
        ctx, instance, operation=preconditions.EVACUATE, migration_type=state.EVACUATION,
        task_state=TASK_REBUILDING, new_flavor=instance.flavor, to_host=to_host,
        exclude_host=instance.host, claim_in=state.PRE_MIGRATING,
        strategy=DoubledClaim(ctx.backend, retries=ctx.conf.placement.conflict_retries),
        expected_vm_states=frozenset({v.ACTIVE, v.ERROR}))


def rebuild(ctx: MoveContext, migration_uuid: str) -> v.Migration:
    """Start the guest on the destination; the instance lives there now."""
    migration = records.get_migration_of(ctx, migration_uuid, state.EVACUATION)
    migration = records.advance(ctx, migration, state.MIGRATING)
    instance = ctx.store.get_instance(migration.instance_uuid)
    ctx.spawn(migration.dest_host, instance, migration.dest_node, instance.flavor)
    records.update_instance(
        ctx, instance.uuid, expected_task_state=TASK_REBUILDING,
        expected_host=migration.source_host, host=migration.dest_host,
        node=migration.dest_node, vm_state=v.ACTIVE, task_state=None,
    )
    # Waiting for the source to come back and remove its half.
    return records.advance(ctx, migration, state.FINISHED)


def evacuate(ctx: MoveContext, instance_ref: str, *, to_host: str | None = None) -> v.Migration:
    """Every step; the source half stays until the source host returns."""
    migration = start(ctx, instance_ref, to_host=to_host)
    try:
        return rebuild(ctx, migration.uuid)
    except Exception as exc:
        LOG.warning("evacuation %s failed (%s); rolling back", migration.uuid, exc)
        resize.rollback(ctx, migration.uuid, reason=f"evacuation {migration.uuid} failed")
        raise


def source_returned(ctx: MoveContext, migration: v.Migration) -> v.Migration:
    """The source host is back: remove the instance's half on the source's
    providers (the instance lives on the destination) and close the record."""
    if migration.status != state.FINISHED:
        raise errors.InvalidTransition(
            f"evacuation {migration.uuid} is {migration.status}; only a finished evacuation "
            "is cleaned up on its source")
    instance = ctx.store.get_instance(migration.instance_uuid)
    if instance.vm_state != v.DELETED and instance.host == migration.source_host:
        raise errors.MoveError(
            f"evacuation {migration.uuid}: instance {instance.uuid} lives on its source host "
            f"{migration.source_host!r} again; its half there is its home's claim")
    record_claims.keep_destination(
        ctx, migration, f"evacuation {migration.uuid}: source host {migration.source_host} "
        "returned and the instance lives elsewhere")
    ctx.destroy(migration.source_host, instance, migration.source_node)
    return records.advance(ctx, migration, state.DONE)
