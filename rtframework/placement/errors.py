"""Typed placement errors.

Every error carries a stable ``code`` (the same strings OpenStack Placement
uses where one exists) so that callers can branch on the kind of failure and
the ``sql`` and ``http`` backends raise the same thing for the same problem.
A backend that raises one of these has changed nothing.
"""

from __future__ import annotations


class PlacementError(Exception):
    """Base class of every backend error."""

    code = "placement.undefined_code"


class BackendUnavailable(PlacementError):
    """The backend could not be reached (database or HTTP connection)."""

    code = "rtframework.backend_unavailable"


class BadAnswer(PlacementError):
    """A remote Placement answered something that is not a Placement answer
    (not JSON, an HTML page, a body of the wrong shape)."""

    code = "rtframework.bad_answer"


class InvalidRequest(PlacementError):
    """The request itself is malformed; retrying it cannot succeed."""

    code = "placement.undefined_code"


class NotFound(PlacementError):
    """A named provider, resource class, trait or consumer does not exist."""

    code = "placement.undefined_code"


class ProviderNotFound(NotFound):
    pass


class ResourceClassNotFound(NotFound):
    pass


class TraitNotFound(NotFound):
    pass


class Conflict(PlacementError):
    """The request conflicts with the current state (HTTP 409 in Placement)."""

    code = "placement.undefined_code"


class GenerationConflict(Conflict):
    """Someone else wrote first: re-read and decide again."""

    code = "placement.concurrent_update"


class ProviderGenerationConflict(GenerationConflict):
    pass


class ConsumerGenerationConflict(GenerationConflict):
    pass


class RetriesExhausted(GenerationConflict):
    """A call kept losing races (generations, deadlocks, Galera
    certification) until its retry budget, attempts or time, ran out.
    Retrying it again at once would lose again: nothing retries this."""


class CapacityExceeded(Conflict):
    """An allocation would take a provider past (total - reserved) * ratio.

    ``provider`` (how the backend names it: uuid first) and
    ``resource_class`` say where, when the backend knows."""

    def __init__(self, message: str, *, provider: str | None = None,
                 resource_class: str | None = None) -> None:
        super().__init__(message)
        self.provider = provider
        self.resource_class = resource_class


class InvalidAllocation(Conflict):
    """An amount breaks min_unit, max_unit or step_size, or names a class the
    provider has no inventory of."""


class InventoryInUse(Conflict):
    code = "placement.inventory.inuse"


class ProviderInUse(Conflict):
    code = "placement.resource_provider.inuse"


class CannotDeleteParent(Conflict):
    code = "placement.resource_provider.cannot_delete_parent"


class DuplicateName(Conflict):
    code = "placement.duplicate_name"


class DuplicateUUID(Conflict):
    code = "placement.undefined_code"


class ResourceClassInUse(Conflict):
    code = "placement.undefined_code"


class TraitInUse(Conflict):
    code = "placement.undefined_code"


class InvalidInventory(InvalidRequest):
    """Inventory fields that cannot be true (total < 1, reserved > total, ...)."""


class InvalidResourceClass(InvalidRequest):
    """A resource class name that is neither standard nor CUSTOM_*."""


class InvalidTrait(InvalidRequest):
    """A trait name that is neither standard (os-traits) nor CUSTOM_*."""
