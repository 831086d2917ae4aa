"""Finishing or undoing the moves a crash interrupted.

A host calls :func:`reconcile` when it starts. For every unfinished
migration that names this host as its source or destination it decides
by the recorded status, so that allocations end on exactly one side:

* not yet at verify-resize (pre-migrating, migrating; a live migration
  accepted or running whose guest has not switched hosts): roll back to
  the source; but a migrating move whose instance record already lives on
  the destination is recorded as finished, unless placement holds its
  source only (a rollback that stopped after its claim step, before it
  moved the record back): that rollback is finished;
* a live migration whose instance already lives on the destination:
  complete it;
* confirming / reverting: finish the confirm / the revert;
* finished (verify-resize): leave it for the user;
* any status, instance deleted (a delete stopped half-way): remove what
  the instance and the migration hold and close the record (``error``);
* a finished evacuation whose source is this host: the source returned,
  so it removes its own half and closes the record, but only when the
  instance record places the instance elsewhere; an instance that lives
  on this host again keeps what it holds here (its home needs it). This
  is the only rule here that removes a claim of an instance the host
  does not run, and it applies only to a record that says this host was
  the source.

Steps are idempotent and compare-and-swap guarded, so both hosts of a
move may reconcile it at the same time.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from rtframework.compute import values as v
from rtframework.moves import (
    claims,
    delete,
    errors,
    evacuate,
    live,
    record_claims,
    records,
    resize,
    state,
    undo,
)
from rtframework.moves.context import MoveContext

LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class Reconciled:
    """What reconcile did to one migration."""

    migration_uuid: str
    instance_uuid: str
    migration_type: str
    old_status: str
    new_status: str
    action: str


def reconcile(ctx: MoveContext, host: str,
              instance_uuid: str | None = None) -> list[Reconciled]:
    """Finish or undo this host's interrupted moves (only those of
    ``instance_uuid`` if given); returns what was done."""
    done = []
    for migration in ctx.store.list_migrations(host=host, instance_uuid=instance_uuid,
                                               statuses=v.UNFINISHED_MIGRATION_STATUSES):
        try:
            action, after = _decide(ctx, host, migration)
        except errors.ConcurrentUpdate:
            # The other host of the move reconciled it at the same time.
            LOG.info("migration %s changed meanwhile; leaving it", migration.uuid)
            continue
        if after is not None:
            LOG.info("recovery on %s: %s %s of instance %s: %s (%s -> %s)", host,
                     migration.migration_type, migration.uuid, migration.instance_uuid,
                     action, migration.status, after.status)
            done.append(Reconciled(migration.uuid, migration.instance_uuid,
                                   migration.migration_type, migration.status, after.status,
                                   action))
    return done


def finish_evacuations(ctx: MoveContext, host: str) -> list[Reconciled]:
    """What the running agent of ``host`` does every pass: remove its half
    of the finished evacuations whose source it is, as its start does (an
    agent that was cut off, not stopped, comes back without a start).
    Nothing else of :func:`reconcile`: a move in flight is not its own."""
    done = []
    for migration in ctx.store.list_migrations(host=host, statuses=[state.FINISHED]):
        if migration.migration_type != state.EVACUATION or migration.source_host != host:
            continue
        try:
            action, after = _decide(ctx, host, migration)
        except errors.ConcurrentUpdate:
            continue
        if after is not None:
            LOG.info("host %s is back: evacuation %s of instance %s: %s", host,
                     migration.uuid, migration.instance_uuid, action)
            done.append(Reconciled(migration.uuid, migration.instance_uuid,
                                   migration.migration_type, migration.status, after.status,
                                   action))
    return done


def _decide(ctx: MoveContext, host: str, migration: v.Migration):
    status, kind = migration.status, migration.migration_type
    reason = f"recovery on {host}: {kind} {migration.uuid} was {status}"
    if ctx.store.get_instance(migration.instance_uuid).vm_state == v.DELETED:
        # A delete stopped before it closed the move: finish the delete.
        delete.drop_move(ctx, migration)
        return "closed: its instance is deleted", ctx.store.get_migration(migration.uuid)
    if status == state.CONFIRMING:
        return "finished the confirm", resize.finish_confirm(ctx, migration)
    if status == state.REVERTING:
        return "finished the revert", resize.finish_revert(ctx, migration)
    if status == state.MIGRATING and _moved(ctx, migration):
        if _back_on_source(ctx, migration):
            # A rollback wrote its claim step and stopped before it moved
            # the record back: a finished move holding only its source could
            # be neither confirmed nor reverted cleanly.
            return "finished the rollback", resize.rollback(ctx, migration.uuid, reason)
        # Stopped between moving the instance record and recording it.
        return "recorded the finished move", records.advance(ctx, migration, state.FINISHED)
    if kind == state.EVACUATION:
        if status == state.FINISHED:
            if migration.source_host != host:
                return "left for the source host", None
            instance = ctx.store.get_instance(migration.instance_uuid)
            if instance.vm_state != v.DELETED and instance.host == host:
                # The record says the instance lives here again: the source
                # half is what its home holds, never ours to remove.
                LOG.warning("evacuation %s: instance %s lives on %s again; its source half "
                            "is its home's claim and stays", migration.uuid, instance.uuid,
                            host)
                return "left: the instance lives on its source again", None
            return "removed the source half", evacuate.source_returned(ctx, migration)
        return "rolled back to the source", resize.rollback(ctx, migration.uuid, reason)
    if kind == state.LIVE:
        instance = ctx.store.get_instance(migration.instance_uuid)
        if instance.host == migration.dest_host and instance.vm_state != v.DELETED:
            return "completed", live.finish_complete(ctx, migration)
        return "rolled back to the source", undo.fail(ctx, migration.uuid,
                                                      status=state.FAILED, reason=reason)
    if status == state.FINISHED:
        return "left for the user to confirm or revert", None
    return "rolled back to the source", resize.rollback(ctx, migration.uuid, reason)


def _back_on_source(ctx: MoveContext, migration: v.Migration) -> bool:
    """Placement holds the move's source half only, on the instance, and
    nothing on the migration consumer: the move's claims were undone."""
    claim = record_claims.claim_for(ctx, migration)
    if not claim.dest or claims.normalized(claim.source) == claims.normalized(claim.dest):
        return False
    held = ctx.backend.get_consumer_allocations(migration.instance_uuid).allocations
    moving = ctx.backend.get_consumer_allocations(migration.uuid).allocations
    return not claims.normalized(moving) and claims.normalized(held) == claim.source


def _moved(ctx: MoveContext, migration: v.Migration) -> bool:
    """The instance record says the guest lives on the destination now."""
    instance = ctx.store.get_instance(migration.instance_uuid)
    if instance.vm_state == v.DELETED or instance.task_state is not None:
        return False
    if instance.host != migration.dest_host or instance.node != migration.dest_node:
        return False
    return migration.migration_type == state.EVACUATION or instance.vm_state == v.RESIZED
