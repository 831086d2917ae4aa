"""The placement backend contract and its loader.

A backend is the single source of truth for resource providers, their
inventories, traits and aggregates, and the allocations consumers hold on
them. Implementations are found through the ``rtframework.placement`` entry
point group and chosen by ``[placement] backend``.

Rules every implementation keeps (the contract tests check them):

* Every inventory, trait and aggregate write bumps the provider's
  generation in the same transaction; so does an allocation write, for
  every provider it leaves a consumer holding something on and every
  provider of a consumer it empties. A provider a consumer only moves off
  (it keeps allocations elsewhere) may keep its generation: Placement does.
  Inventory, trait and aggregate writes carry the caller's provider
  generation and raise ProviderGenerationConflict on mismatch; allocation
  writes do not (the backend re-reads provider state itself).
* Every allocation write names the consumer generation it expects (None for
  a new consumer) and raises ConsumerGenerationConflict on mismatch. A
  consumer whose allocations are all removed is forgotten.
* write_allocations is all or nothing across every consumer named.
* A failed call raises a PlacementError subclass and changes nothing.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence

from oslo_config import cfg

from rtframework.placement import types as t

NAMESPACE = "rtframework.placement"


class PlacementClient(abc.ABC):
    """What the resource tracker, the moves, the scheduler and audit use.

    The rules they rely on, beyond each method's own:

    * A write that gives a consumer nobody knows no allocations (generation
      None, allocations empty) is a no-op: no consumer record is kept.
    * A consumer that holds nothing reads as generation None, whether it
      never existed or its allocations were all removed; its next write
      names None again.
    * An allocation write bumps every provider the consumer holds something
      on after it; emptying a consumer (a write or
      :meth:`PlacementAdmin.delete_allocations`) bumps every provider it
      held. A provider the consumer only moves off may keep its generation
      (Placement's does), so a reader that skips re-reading allocations
      while generations stay put sees every consumer that arrived or
      changed, but may still list one that left.
    * Uuids are accepted in any spelling :func:`oslo_utils.uuidutils.is_uuid_like`
      takes and returned lower-case and dashed.
    """

    def __init__(self, conf: cfg.ConfigOpts) -> None:
        self.conf = conf

    @classmethod
    def register_opts(cls, conf: cfg.ConfigOpts) -> None:  # noqa: B027 - optional hook
        """Register the backend's own options on ``conf`` (called by
        :func:`load_backend` before the backend is built)."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections."""

    # -- resource classes and traits -----------------------------------------
    def ensure_resource_class(self, name: str) -> None:
        """Create a CUSTOM_* class if missing; standard names are a no-op."""

    def ensure_trait(self, name: str) -> None:
        """Create a CUSTOM_* trait if missing; standard names are a no-op."""

    # -- providers -----------------------------------------------------------
    def create_provider(
        self, name: str, uuid: str | None = None, parent_uuid: str | None = None
    ) -> t.ResourceProvider:
        """Create a provider at generation 0 (DuplicateName, DuplicateUUID)."""

    def get_provider(self, uuid: str) -> t.ResourceProvider:
        """One provider (ProviderNotFound)."""

    def list_providers(self, query: t.ProviderQuery | None = None) -> list[t.ResourceProvider]:
        """Providers matching every filter given."""

    def delete_provider(self, uuid: str) -> None:
        """Delete a provider with no allocations (ProviderInUse) and no
        children (CannotDeleteParent); its inventory, traits and aggregate
        links go with it."""

    # -- inventory and traits of a provider ----------------------------------
    def get_inventories(self, uuid: str) -> t.ProviderInventories:
        """The whole inventory and the provider generation."""

    def set_inventories(
        self, uuid: str, generation: int, inventories: Mapping[str, t.Inventory]
    ) -> int:
        """Replace the whole inventory; returns the new generation.

        Classes left out are removed (InventoryInUse if allocated). Shrinking
        below current usage is accepted and logged.
        """

    def get_provider_traits(self, uuid: str) -> t.ProviderTraits: ...

    def set_provider_traits(self, uuid: str, generation: int, traits: frozenset[str]) -> int:
        """Replace the provider's traits (TraitNotFound for unknown ones)."""

    # -- allocations ---------------------------------------------------------
    @abc.abstractmethod
    def get_consumer_allocations(self, consumer_uuid: str) -> t.ConsumerAllocations:
        """What a consumer holds; empty with generation None if unknown or if
        it holds nothing (an emptied consumer is forgotten)."""

    def get_consumers_allocations(
        self, consumer_uuids: Sequence[str]
    ) -> dict[str, t.ConsumerAllocations]:
        """consumer uuid -> :meth:`get_consumer_allocations` of it, for many
        consumers; a backend that reads them at once overrides this loop."""
        return {c.consumer_uuid: c for c in map(self.get_consumer_allocations, consumer_uuids)}

    def get_provider_allocations(self, uuid: str) -> dict[str, dict[str, int]]:
        """consumer uuid -> resource class -> amount on this one provider."""

    def write_allocations(self, writes: Sequence[t.AllocationWrite]) -> None:
        """Replace the allocations of every consumer named, atomically.

        Checks each consumer generation, removes the consumers' current
        allocations, checks capacity and units of the result (amounts of all
        consumers summed per provider and class), writes, bumps every touched
        provider and consumer. Raises ConsumerGenerationConflict,
        CapacityExceeded, InvalidAllocation, ProviderNotFound.
        """

    def put_allocations(
        self,
        consumer_uuid: str,
        allocations: t.Allocations,
        *,
        project_id: str,
        user_id: str,
        consumer_generation: int | None,
        consumer_type: str = "INSTANCE",
    ) -> None:
        """Replace one consumer's allocations (a one-consumer write)."""
        self.write_allocations([
            t.AllocationWrite(
                consumer_uuid=consumer_uuid,
                allocations=allocations,
                project_id=project_id,
                user_id=user_id,
                consumer_generation=consumer_generation,
                consumer_type=consumer_type,
            )
        ])

    # -- usages and candidates -----------------------------------------------
    def get_provider_usages(self, uuid: str) -> dict[str, int]:
        """resource class -> amount allocated, for every class in inventory."""

    def get_allocation_candidates(self, query: t.CandidateQuery) -> t.AllocationCandidates:
        """Trees that can satisfy the request, with what to write to claim."""


class PlacementAdmin(abc.ABC):
    """What operators' commands and tools use besides :class:`PlacementClient`."""

    # -- resource classes and traits -----------------------------------------
    def list_resource_classes(self) -> list[str]:
        """Standard and custom resource class names."""

    def delete_resource_class(self, name: str) -> None:
        """Delete a custom class no inventory uses (ResourceClassInUse)."""

    def rename_resource_class(self, name: str, new_name: str) -> None:
        """Rename a custom class, in every inventory and allocation
        (ResourceClassNotFound; Conflict if ``new_name`` exists)."""

    def list_traits(self, prefix: str | None = None, *,
                    associated: bool | None = None) -> list[str]:
        """Standard and custom trait names, optionally by prefix; with
        ``associated``, only those some provider has (True) or none has
        (False)."""

    def delete_trait(self, name: str) -> None:
        """Delete a custom trait no provider has (TraitInUse, TraitNotFound)."""

    # -- providers and inventory ---------------------------------------------
    def update_provider(
        self, uuid: str, *, name: str, parent_uuid: str | None = None, detach: bool = False
    ) -> t.ResourceProvider:
        """Rename a provider, move it under ``parent_uuid`` (None keeps its
        parent) or, with ``detach``, make it the root of its own tree."""

    def set_inventory(
        self, uuid: str, generation: int, resource_class: str, inventory: t.Inventory
    ) -> int:
        """Create or replace one class; returns the new generation."""

    def delete_inventory(self, uuid: str, generation: int, resource_class: str) -> int:
        """Remove one class (InventoryInUse if allocated)."""

    # -- aggregates ----------------------------------------------------------
    def get_provider_aggregates(self, uuid: str) -> t.ProviderAggregates: ...

    def set_provider_aggregates(
        self, uuid: str, generation: int, aggregates: frozenset[str], *, bump: bool = True
    ) -> int:
        """Replace the provider's aggregates; the new generation. ``bump=False``
        keeps the generation (Placement's API before 1.19 does)."""

    # -- allocations and usages ----------------------------------------------
    def reshape(self, inventories: Mapping[str, t.ProviderInventories],
                allocations: Sequence[t.AllocationWrite]) -> None:
        """Replace the inventories of the providers named (each at the
        generation given) and the allocations of the consumers named, all
        or nothing: allocations may move to inventory created in the same
        call, and inventory may go that allocations leave (Placement's
        POST /reshaper)."""

    @abc.abstractmethod
    def delete_allocations(self, consumer_uuid: str) -> None:
        """Remove everything a consumer holds, whatever its generation (an
        operator's tool; the tracker writes with generations instead). Like
        every emptying write it bumps the generation of each provider the
        consumer held; an unknown consumer is a no-op."""

    def get_project_usages(self, project_id: str, user_id: str | None = None) -> dict[str, int]:
        """resource class -> amount allocated to the project's consumers."""

    def get_project_usages_by_type(self, project_id: str, user_id: str | None = None,
                                   consumer_type: str | None = None
                                   ) -> dict[str, dict[str, int]]:
        """consumer type (``unknown`` for none) -> resource class -> amount,
        with ``consumer_count``; ``consumer_type`` keeps one type, ``all``
        sums every type into one group named ``all`` (Placement 1.38)."""


class PlacementBackend(PlacementClient, PlacementAdmin):
    """The whole contract: what a backend registered in ``rtframework.placement``
    implements. The contract tests (``rtframework.placement.contract_tests``)
    check every rule written here."""


class BackendLoadError(Exception):
    """The configured backend is not installed or failed to load."""


def load_backend(conf: cfg.ConfigOpts, name: str | None = None) -> PlacementBackend:
    """Instantiate the backend named by ``[placement] backend``.

    The entry point must name a :class:`PlacementBackend` subclass; its
    ``register_opts`` runs before it is built.
    """
    from rtframework import plugins

    name = name or conf.placement.backend
    backend_cls = plugins.load_class(NAMESPACE, name, "placement backend", BackendLoadError)
    if not (isinstance(backend_cls, type) and issubclass(backend_cls, PlacementBackend)):
        raise BackendLoadError(
            f"placement backend {name!r} ({_qualname(backend_cls)}) is not a subclass of "
            f"{PlacementBackend.__module__}.PlacementBackend")
    backend_cls.register_opts(conf)
    return backend_cls(conf)


def _qualname(obj: object) -> str:
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', repr(obj))}"
