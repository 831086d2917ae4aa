"""Rolling a move back: allocations on the source only, the instance
record (and its guest) back on the source, the migration closed."""

from __future__ import annotations

from rtframework.compute import values as v
from rtframework.moves import state
from rtframework.moves.context import MoveContext
from rtframework.moves.record_claims import keep_source
from rtframework.moves.records import advance, get_migration, update_instance


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
    keep_source(ctx, migration, reason)
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
