"""Deleting an instance at any phase of any move.

The instance is marked DELETED first (every later step of a move it was
in then loses its compare-and-swap), then everything the instance and the
migration consumers of its unfinished moves hold goes, in one write per
move, and those migrations are closed as ``error``. Nothing of it can come
back: rollbacks never re-create a deleted instance's allocations.
"""

from __future__ import annotations

import logging

from rtframework import retry
from rtframework.compute import values as v
from rtframework.moves import claims, errors, preconditions, record_claims, records, state
from rtframework.moves.context import MoveContext

LOG = logging.getLogger(__name__)


def unfinished_migrations(ctx: MoveContext, instance_uuid: str) -> list[v.Migration]:
    return ctx.store.list_migrations(instance_uuid=instance_uuid,
                                     statuses=v.UNFINISHED_MIGRATION_STATUSES)


def delete(ctx: MoveContext, instance_ref: str, attempts: int = 5) -> v.Instance:
    """Delete the instance and every claim of it; returns the DELETED record.

    The one delete: ``rtf delete`` (through the owning host's tracker) and
    a delete in the middle of a move both come here. A move step that
    changes the record between our read and our mark makes us read again,
    so a racing move never makes a delete fail.
    """
    for attempt in range(attempts):
        instance = records.lookup_instance(ctx, instance_ref)
        preconditions.check(ctx.conf, ctx.store, preconditions.DELETE, instance)
        try:
            deleted = records.update_instance(
                ctx, instance.uuid, expected_vm_state=instance.vm_state,
                expected_task_state=instance.task_state, expected_host=instance.host,
                vm_state=v.DELETED, task_state=None,
            )
            break
        except errors.ConcurrentUpdate:
            if attempt == attempts - 1:
                raise
            LOG.info("instance %s changed while being deleted; reading it again",
                     instance.uuid)
    for migration in unfinished_migrations(ctx, instance.uuid):
        drop_move(ctx, migration)
    # Whatever the instance still holds outside a move (or if a move was
    # recorded without a destination yet).
    remove_instance_allocations(ctx, deleted, reason=f"instance {instance.uuid} deleted")
    ctx.destroy(instance.host, instance, instance.node)
    return deleted


def drop_move(ctx: MoveContext, migration: v.Migration) -> None:
    """Remove everything of the instance and of ``migration``; close it."""
    instance = ctx.store.get_instance(migration.instance_uuid)
    # Everything of both consumers goes, wherever it lies: no need to know
    # the move's nodes (one of them may be gone).
    move = claims.MoveClaim(instance_uuid=instance.uuid, migration_uuid=migration.uuid,
                            project_id=instance.project_id, user_id=instance.user_id,
                            source={}, dest={})
    record_claims.strategy_for(ctx, migration).drop_instance(
        move, reason=f"instance {migration.instance_uuid} deleted during "
        f"{migration.migration_type} {migration.uuid}")
    ctx.destroy(migration.source_host, instance, migration.source_node)
    ctx.destroy(migration.dest_host, instance, migration.dest_node)
    while not state.is_final(migration.status):
        try:
            records.advance(ctx, migration, state.ERROR)
            return
        except errors.ConcurrentUpdate:
            migration = ctx.store.get_migration(migration.uuid)


def remove_instance_allocations(ctx: MoveContext, instance: v.Instance, reason: str) -> None:
    """Remove all an instance holds, with its consumer generation."""

    def attempt() -> None:
        held = ctx.backend.get_consumer_allocations(instance.uuid)
        if held.generation is None:
            return
        ctx.backend.write_allocations([held.emptied(
            project_id=instance.project_id, user_id=instance.user_id)])
        claims.log_change(instance.uuid, held.allocations, {}, reason)

    retry.on_conflict(attempt, ctx.conf.placement.conflict_retries, reason)

