"""Typed errors of the compute records."""

from __future__ import annotations


class ComputeError(Exception):
    """Base class of compute record errors."""


class NotFound(ComputeError):
    pass


class InstanceNotFound(NotFound):
    pass


class MigrationNotFound(NotFound):
    pass


class ComputeNodeNotFound(NotFound):
    pass


class ServiceNotFound(NotFound):
    pass


class AmbiguousInstance(ComputeError):
    """A name given for an instance matches more than one."""


class InvalidValue(ComputeError):
    """A state, type or field that the records do not accept."""


class StateConflict(ComputeError):
    """A compare-and-swap update found the record in another state: someone
    else acted first. Re-read and decide again."""
