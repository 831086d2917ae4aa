"""Resize (and the cold migration it generalises): move, wait, confirm or revert.

Steps, each a compare-and-swap on the records:

1. ``start``: the instance is taken (task_state resize_prep), a migration
   is recorded (pre-migrating) and the double claim is written on the
   destination the caller named or the scheduler found;
2. ``migrate``: migrating, the guest is copied;
3. ``finish``: finished, the instance lives on the destination with its
   new flavor, vm_state RESIZED, waiting for the user;
4. ``confirm`` (source half removed) or ``revert`` (destination half
   removed, instance back on the source with its old flavor).

A failure before ``finish`` rolls back: allocations end on the source.
A resize may stay on the same host (the claim then holds both flavors on
one provider until it ends).
"""

from __future__ import annotations

import logging
from typing import Any

from rtframework.compute import values as v
from rtframework.moves import (
    destination,
    errors,
    preconditions,
    record_claims,
    records,
    state,
    undo,
)
from rtframework.moves.context import MoveContext
from rtframework.moves.start import start_move

LOG = logging.getLogger(__name__)

TASK_PREP = "resize_prep"
TASK_MIGRATING = "resize_migrating"


def start(
    ctx: MoveContext,
    instance_ref: str,
    new_flavor: v.Flavor | None = None,
    *,
    to_host: str | None = None,
    migration_type: str = state.RESIZE,
) -> v.Migration:
    """Take the instance, record the move, hold the double claim."""
    instance = records.lookup_instance(ctx, instance_ref)
    cold = migration_type == state.COLD
    if cold:
        new_flavor = instance.flavor
    elif new_flavor is None:
        raise errors.MoveError("a resize needs a new flavor")
    else:
        destination.validate_flavor(ctx, new_flavor)
        if dict(new_flavor.resources) == dict(instance.flavor.resources):
            raise errors.MoveError(
                f"instance {instance.uuid} has flavor {dict(instance.flavor.resources)} "
                "already")
    return start_move(
        ctx, instance, operation=preconditions.MIGRATE if cold else preconditions.RESIZE,
        migration_type=migration_type, task_state=TASK_PREP, new_flavor=new_flavor,
        to_host=to_host,
        # A cold migration must leave the host; a resize may stay.
        exclude_host=instance.host if cold else None)


def migrate(ctx: MoveContext, migration_uuid: str) -> v.Migration:
    """Copy the guest: migrating; the destination host starts it."""
    migration = records.get_migration(ctx, migration_uuid)
    records.update_instance(ctx, migration.instance_uuid, expected_task_state=TASK_PREP,
                            task_state=TASK_MIGRATING)
    return records.advance(ctx, migration, state.MIGRATING)


def finish(ctx: MoveContext, migration_uuid: str) -> v.Migration:
    """The instance lives on the destination, RESIZED, until confirm or revert."""
    migration = records.get_migration(ctx, migration_uuid)
    instance = ctx.store.get_instance(migration.instance_uuid)
    ctx.spawn(migration.dest_host, instance, migration.dest_node, migration.new_flavor)
    records.update_instance(
        ctx, instance.uuid, expected_task_state=TASK_MIGRATING, expected_host=migration.source_host,
        host=migration.dest_host, node=migration.dest_node, flavor=migration.new_flavor,
        vm_state=v.RESIZED, task_state=None,
    )
    return records.advance(ctx, migration, state.FINISHED)


def run(ctx: MoveContext, instance_ref: str, new_flavor: v.Flavor | None = None,
        **where: Any) -> v.Migration:
    """All steps up to verify-resize (``where``: :func:`start`'s ``to_host``
    and ``migration_type``); a failure rolls back to the source."""
    migration = start(ctx, instance_ref, new_flavor, **where)
    try:
        migrate(ctx, migration.uuid)
        return finish(ctx, migration.uuid)
    except Exception as exc:
        LOG.warning("%s %s failed (%s); rolling back to the source", migration.migration_type,
                    migration.uuid, exc)
        rollback(ctx, migration.uuid,
                 reason=f"{migration.migration_type} {migration.uuid} failed")
        raise


def rollback(ctx: MoveContext, migration_uuid: str, reason: str) -> v.Migration:
    """Undo an unfinished move before ``finish``: source only, record error."""
    return undo.fail(ctx, migration_uuid, reason=reason)


def confirm(ctx: MoveContext, migration_uuid: str) -> v.Migration:
    """Keep the destination. Confirming a confirmed move changes nothing."""
    migration = _take(ctx, migration_uuid, state.CONFIRMING, state.CONFIRMED,
                      (state.REVERTING, state.REVERTED), errors.AlreadyReverted)
    if migration.status == state.CONFIRMED:
        return migration
    return finish_confirm(ctx, migration)


def _take(ctx: MoveContext, migration_uuid: str, going: str, done: str,
          other_way: tuple[str, ...], refused: type[errors.MoveError]) -> v.Migration:
    """The record of a verify-resize move, moved to ``going`` (confirming or
    reverting) unless it is there or ``done`` already; ``refused`` if the
    move went ``other_way``."""
    migration = records.get_migration(ctx, migration_uuid)
    if migration.migration_type not in (state.COLD, state.RESIZE):
        raise errors.MoveError(
            f"migration {migration.uuid} is a {migration.migration_type}; only cold "
            "migrations and resizes are confirmed or reverted")
    if migration.status in (going, done):
        return migration
    if migration.status in other_way:
        raise refused(f"{migration.migration_type} {migration.uuid} is {migration.status}; "
                      f"it cannot be {done}")
    state.check(migration.uuid, migration.migration_type, migration.status, going)
    operation = preconditions.CONFIRM if going == state.CONFIRMING else preconditions.REVERT
    preconditions.check(ctx.conf, ctx.store, operation,
                        records.lookup_instance(ctx, migration.instance_uuid),
                        migration=migration)
    return records.advance(ctx, migration, going)


def finish_confirm(ctx: MoveContext, migration: v.Migration) -> v.Migration:
    """The rest of a confirm (also what recovery runs for ``confirming``)."""
    record_claims.keep_destination(ctx, migration,
                                   f"{migration.migration_type} {migration.uuid} confirmed")
    instance = ctx.store.get_instance(migration.instance_uuid)
    # The source copy goes only when the record places the instance elsewhere.
    if migration.source_host != migration.dest_host and instance.host != migration.source_host:
        ctx.destroy(migration.source_host, instance, migration.source_node)
    if instance.vm_state == v.RESIZED:
        records.update_instance(ctx, instance.uuid, expected_vm_state=v.RESIZED,
                                vm_state=v.ACTIVE, task_state=None)
    return records.advance(ctx, migration, state.CONFIRMED)


def revert(ctx: MoveContext, migration_uuid: str) -> v.Migration:
    """Go back to the source and the old flavor. Reverting a confirmed move
    is AlreadyConfirmed and changes nothing."""
    migration = _take(ctx, migration_uuid, state.REVERTING, state.REVERTED,
                      (state.CONFIRMING, state.CONFIRMED), errors.AlreadyConfirmed)
    if migration.status == state.REVERTED:
        return migration
    return finish_revert(ctx, migration)


def finish_revert(ctx: MoveContext, migration: v.Migration) -> v.Migration:
    """The rest of a revert (also what recovery runs for ``reverting``)."""
    record_claims.keep_source(ctx, migration,
                              f"{migration.migration_type} {migration.uuid} reverted")
    instance = ctx.store.get_instance(migration.instance_uuid)
    if instance.vm_state != v.DELETED and not undo.restore_on_source(ctx, migration, instance):
        if migration.source_host != migration.dest_host:
            ctx.destroy(migration.dest_host, instance, migration.dest_node)
    return records.advance(ctx, migration, state.REVERTED)
