"""Cold migration: a resize to the same flavor that must leave the host.

It waits in verify-resize like a resize and is confirmed or reverted with
:func:`rtframework.moves.resize.confirm` / ``revert``.
"""

from __future__ import annotations

from rtframework.compute import values as v
from rtframework.moves import resize, state
from rtframework.moves.context import MoveContext


def start(ctx: MoveContext, instance_ref: str, *, to_host: str | None = None) -> v.Migration:
    """Take the instance and hold its claim on another host (pre-migrating)."""
    return resize.start(ctx, instance_ref, to_host=to_host, migration_type=state.COLD)


def migrate(ctx: MoveContext, instance_ref: str, *, to_host: str | None = None) -> v.Migration:
    """Every step up to verify-resize (finished); a failure rolls back."""
    return resize.run(ctx, instance_ref, to_host=to_host, migration_type=state.COLD)
