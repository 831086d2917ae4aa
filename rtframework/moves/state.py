"""The allowed transitions of a migration record's status, per move kind.

Cold migrations and resizes wait in ``finished`` (the instance is
RESIZED: verify-resize) until the user confirms or reverts. An evacuation
also waits in ``finished``, until the source host returns and removes its
half (the source's own confirm). A live migration ends by itself:
``done``, or ``failed``/``cancelled`` after rolling back to the source.
``error`` is reachable from every unfinished status: a failed step rolls
back, and an instance deleted mid-move takes its claims with it.
"""

from __future__ import annotations

from collections.abc import Mapping

from rtframework.compute import values
from rtframework.moves import errors

COLD = "migration"
RESIZE = "resize"
LIVE = "live-migration"
EVACUATION = "evacuation"

ACCEPTED = "accepted"
PRE_MIGRATING = "pre-migrating"
MIGRATING = "migrating"
RUNNING = "running"
FINISHED = "finished"
CONFIRMING = "confirming"
CONFIRMED = "confirmed"
REVERTING = "reverting"
REVERTED = "reverted"
DONE = "done"
FAILED = "failed"
CANCELLED = "cancelled"
ERROR = "error"

# Statuses after which a migration holds no claim of its own any more.
FINAL = values.FINISHED_MIGRATION_STATUSES

_COLD: Mapping[str, frozenset[str]] = {
    PRE_MIGRATING: frozenset({MIGRATING, ERROR}),
    MIGRATING: frozenset({FINISHED, ERROR}),
    FINISHED: frozenset({CONFIRMING, REVERTING, ERROR}),
    CONFIRMING: frozenset({CONFIRMED, ERROR}),
    REVERTING: frozenset({REVERTED, ERROR}),
}

TRANSITIONS: Mapping[str, Mapping[str, frozenset[str]]] = {
    COLD: _COLD,
    RESIZE: _COLD,
    LIVE: {
        ACCEPTED: frozenset({PRE_MIGRATING, RUNNING, FAILED, CANCELLED, ERROR}),
        PRE_MIGRATING: frozenset({RUNNING, FAILED, CANCELLED, ERROR}),
        RUNNING: frozenset({DONE, FAILED, CANCELLED, ERROR}),
    },
    EVACUATION: {
        ACCEPTED: frozenset({PRE_MIGRATING, ERROR}),
        PRE_MIGRATING: frozenset({MIGRATING, ERROR}),
        MIGRATING: frozenset({FINISHED, ERROR}),
        FINISHED: frozenset({DONE, ERROR}),
    },
}

# The status a new migration record of each kind starts in.
INITIAL: Mapping[str, str] = {
    COLD: PRE_MIGRATING,
    RESIZE: PRE_MIGRATING,
    LIVE: ACCEPTED,
    EVACUATION: ACCEPTED,
}


def allowed(migration_type: str, status: str) -> frozenset[str]:
    """Statuses a migration of ``migration_type`` may go to from ``status``."""
    try:
        table = TRANSITIONS[migration_type]
    except KeyError:
        raise errors.MoveError(f"unknown migration type {migration_type!r}") from None
    return table.get(status, frozenset())


def check(migration_uuid: str, migration_type: str, status: str, new_status: str) -> None:
    """Raise InvalidTransition unless ``status -> new_status`` is allowed."""
    if new_status not in allowed(migration_type, status):
        nexts = ", ".join(sorted(allowed(migration_type, status))) or "none (final)"
        raise errors.InvalidTransition(
            f"{migration_type} {migration_uuid} is {status!r}; it cannot become "
            f"{new_status!r} (allowed: {nexts})"
        )


def is_final(status: str) -> bool:
    return status in FINAL
