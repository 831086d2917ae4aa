"""The steps of a move on its records: take the instance, record the
migration, advance its status; every write compare-and-swap guarded, a
lost race raised as ConcurrentUpdate."""

from __future__ import annotations

import logging
from typing import Any

from rtframework.compute import errors as cerrors
from rtframework.compute import values as v
from rtframework.moves import claims, errors, state
from rtframework.moves.context import MoveContext

LOG = logging.getLogger(__name__)


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
