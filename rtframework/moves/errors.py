"""Typed errors of move operations; messages name the instance, migration
and the numbers involved."""

from __future__ import annotations


class MoveError(Exception):
    """A move cannot do what it was asked; nothing was changed."""


class InvalidTransition(MoveError):
    """The migration's status does not allow the requested step."""


class AlreadyConfirmed(InvalidTransition):
    """A revert was asked of a move that was confirmed."""


class AlreadyReverted(InvalidTransition):
    """A confirm was asked of a move that was reverted or rolled back."""


class InstanceGone(MoveError):
    """The instance was deleted (no allocations and/or no record left)."""


class UnexpectedAllocations(MoveError):
    """What placement holds matches no state of this move; refusing to guess."""


class ConcurrentUpdate(MoveError):
    """Another actor changed the instance or migration record first."""


class PreconditionFailed(MoveError):
    """An operation's row of the preconditions table refused it; ``rule``
    names the rule. Nothing was written."""

    def __init__(self, message: str, rule: str) -> None:
        super().__init__(message)
        self.rule = rule


class InstanceBusy(PreconditionFailed, ConcurrentUpdate):
    """The instance has a task running; try again when it is done."""
