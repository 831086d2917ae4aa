"""Starting a move, the same for every kind: the preconditions checked, the
instance taken and the migration recorded, the double claim held on a
destination (or, when none can be had, the move rolled back)."""

from __future__ import annotations

from rtframework.compute import values as v
from rtframework.moves import claims, destination, preconditions, records, state
from rtframework.moves.context import MoveContext


def start_move(
    ctx: MoveContext,
    instance: v.Instance,
    *,
    operation: str,
    migration_type: str,
    task_state: str,
    new_flavor: v.Flavor,
    to_host: str | None,
    exclude_host: str | None,
    strategy: claims.ClaimStrategy | None = None,
    claim_in: str | None = None,
    failure_status: str = state.ERROR,
    expected_vm_states: frozenset[str] = frozenset({v.ACTIVE}),
) -> v.Migration:
    """The move's record, holding its claim on the chosen destination.

    ``operation`` is the row of the preconditions table; ``strategy``
    defaults to ``[placement] move_claim_strategy``; ``claim_in`` is the
    status the record moves to before the claim (None: its first status);
    ``exclude_host`` is a host the move must leave.
    """
    preconditions.check(ctx.conf, ctx.store, operation, instance, dest_host=to_host)
    strategy = strategy or claims.configured(ctx.backend, ctx.conf)
    _, migration = records.begin(
        ctx, instance, migration_type=migration_type, task_state=task_state,
        new_flavor=new_flavor, claim_strategy=strategy.name,
        expected_vm_states=expected_vm_states,
    )
    if claim_in is not None:
        migration = records.advance(ctx, migration, claim_in)
    migration, _ = destination.claim_destination(
        ctx, migration, to_host=to_host, exclude_host=exclude_host, strategy=strategy,
        reason=f"{migration_type} {migration.uuid} start", failure_status=failure_status,
        operation=operation,
    )
    return migration
