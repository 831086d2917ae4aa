"""Live migration: the guest keeps running while it moves.

``start`` takes the instance, records the migration (accepted) and holds
the double claim, then ``running``; if the guest cannot be started on the
destination it rolls back (``failed``: the source only, instance idle).
It ends by itself: ``complete`` (the guest runs on the destination: the
source half goes, ``done``), or ``rollback`` after a failure (``failed``)
or an abort (``cancelled``): the destination half goes and the guest
stays on the source.
"""

from __future__ import annotations

import logging

from rtframework.compute import values as v
from rtframework.moves import errors, preconditions, record_claims, records, state, undo
from rtframework.moves.context import MoveContext
from rtframework.moves.start import start_move

LOG = logging.getLogger(__name__)

TASK_MIGRATING = "migrating"


def start(ctx: MoveContext, instance_ref: str, *, to_host: str | None = None) -> v.Migration:
    """Hold the claim on the destination and start copying: running."""
    instance = records.lookup_instance(ctx, instance_ref)
    migration = start_move(
        ctx, instance, operation=preconditions.LIVE_MIGRATE, migration_type=state.LIVE,
        task_state=TASK_MIGRATING, new_flavor=instance.flavor, to_host=to_host,
        exclude_host=instance.host, failure_status=state.FAILED)
    try:
        ctx.spawn(migration.dest_host, instance, migration.dest_node, instance.flavor)
        return records.advance(ctx, migration, state.RUNNING)
    except Exception as exc:
        # Nothing runs on the destination: its half goes, the record is
        # closed and the instance is released, or every later move of it
        # would be refused as busy.
        LOG.warning("live-migration %s could not start on %s (%s); rolling back",
                    migration.uuid, migration.dest_host, exc)
        ctx.destroy(migration.dest_host, instance, migration.dest_node)
        undo.fail(ctx, migration.uuid, status=state.FAILED,
                  reason=f"live-migration {migration.uuid} start failed")
        raise


def complete(ctx: MoveContext, migration_uuid: str) -> v.Migration:
    """The guest runs on the destination: keep only that side, ``done``.

    The instance record moves first: from then on a crash is finished
    forward by recovery (the destination is where the guest runs).
    """
    migration = records.get_migration_of(ctx, migration_uuid, state.LIVE)
    if migration.status == state.DONE:
        return migration
    instance = ctx.store.get_instance(migration.instance_uuid)
    if instance.vm_state == v.DELETED:
        raise errors.InstanceGone(f"instance {instance.uuid} was deleted during {migration.uuid}")
    if instance.host != migration.dest_host:
        records.update_instance(
            ctx, instance.uuid, expected_task_state=TASK_MIGRATING,
            expected_host=migration.source_host, host=migration.dest_host,
            node=migration.dest_node, task_state=None,
        )
    return finish_complete(ctx, migration)


def finish_complete(ctx: MoveContext, migration: v.Migration) -> v.Migration:
    record_claims.keep_destination(ctx, migration,
                                   f"live-migration {migration.uuid} completed")
    instance = ctx.store.get_instance(migration.instance_uuid)
    ctx.destroy(migration.source_host, instance, migration.source_node)
    return records.advance(ctx, migration, state.DONE)


def rollback(ctx: MoveContext, migration_uuid: str, *, abort: bool = False) -> v.Migration:
    """Give up (``failed``) or abort (``cancelled``): the guest stays on the
    source and only the source half remains."""
    migration = records.get_migration_of(ctx, migration_uuid, state.LIVE)
    status = state.CANCELLED if abort else state.FAILED
    if migration.status == status:
        return migration
    if migration.status == state.DONE:
        raise errors.AlreadyConfirmed(
            f"live-migration {migration.uuid} is done; it cannot be {status}")
    instance = ctx.store.get_instance(migration.instance_uuid)
    if instance.host == migration.dest_host and instance.vm_state != v.DELETED:
        raise errors.InvalidTransition(
            f"live-migration {migration.uuid}: the guest runs on {migration.dest_host!r} "
            "already; it can only complete")
    state.check(migration.uuid, migration.migration_type, migration.status, status)
    ctx.destroy(migration.dest_host, instance, migration.dest_node)
    return undo.fail(ctx, migration.uuid, status=status,
                     reason=f"live-migration {migration.uuid} {status}")
