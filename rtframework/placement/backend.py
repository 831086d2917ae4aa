"""The placement backend contract and its loader.

A backend is the single source of truth for resource providers, their
inventories, traits and aggregates, and the allocations consumers hold on
them. Implementations are found through the ``rtframework.placement`` entry
point group and chosen by ``[placement] backend``.

Rules every implementation keeps (the contract tests check them):

* Every write that touches a provider (inventory, traits, aggregates,
  allocations) bumps its generation in the same transaction. Inventory,
  trait and aggregate writes carry the caller's provider generation and
  raise ProviderGenerationConflict on mismatch; allocation writes do not
  (the backend re-reads provider state itself).
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


class PlacementBackend(abc.ABC):
    """What a resource tracker, the move logic and a scheduler need."""

    def __init__(self, conf: cfg.ConfigOpts) -> None:
        self.conf = conf

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections."""

    # -- resource classes and traits ------------------------------------
    @abc.abstractmethod
    def list_resource_classes(self) -> list[str]:
        """Standard and custom resource class names."""

    @abc.abstractmethod
    def ensure_resource_class(self, name: str) -> None:
        """Create a CUSTOM_* class if missing; standard names are a no-op."""

    @abc.abstractmethod
    def delete_resource_class(self, name: str) -> None:
        """Delete a custom class no inventory uses (ResourceClassInUse)."""

    @abc.abstractmethod
    def list_traits(self, prefix: str | None = None) -> list[str]:
        """Standard and custom trait names, optionally by prefix."""

    @abc.abstractmethod
    def ensure_trait(self, name: str) -> None:
        """Create a CUSTOM_* trait if missing; standard names are a no-op."""

    # -- providers -------------------------------------------------------
    @abc.abstractmethod
    def create_provider(
        self, name: str, uuid: str | None = None, parent_uuid: str | None = None
    ) -> t.ResourceProvider:
        """Create a provider at generation 0 (DuplicateName, DuplicateUUID)."""

    @abc.abstractmethod
    def get_provider(self, uuid: str) -> t.ResourceProvider:
        """One provider (ProviderNotFound)."""

    @abc.abstractmethod
    def list_providers(self, query: t.ProviderQuery | None = None) -> list[t.ResourceProvider]:
        """Providers matching every filter given."""

    @abc.abstractmethod
    def update_provider(
        self, uuid: str, *, name: str, parent_uuid: str | None = None
    ) -> t.ResourceProvider:
        """Rename a provider or give a root a parent."""

    @abc.abstractmethod
    def delete_provider(self, uuid: str) -> None:
        """Delete a provider with no allocations (ProviderInUse) and no
        children (CannotDeleteParent); its inventory, traits and aggregate
        links go with it."""

    # -- inventory -------------------------------------------------------
    @abc.abstractmethod
    def get_inventories(self, uuid: str) -> t.ProviderInventories:
        """The whole inventory and the provider generation."""

    @abc.abstractmethod
    def set_inventories(
        self, uuid: str, generation: int, inventories: Mapping[str, t.Inventory]
    ) -> int:
        """Replace the whole inventory; returns the new generation.

        Classes left out are removed (InventoryInUse if allocated). Shrinking
        below current usage is accepted and logged.
        """

    @abc.abstractmethod
    def set_inventory(
        self, uuid: str, generation: int, resource_class: str, inventory: t.Inventory
    ) -> int:
        """Create or replace one class; returns the new generation."""

    @abc.abstractmethod
    def delete_inventory(self, uuid: str, generation: int, resource_class: str) -> int:
        """Remove one class (InventoryInUse if allocated)."""

    # -- traits and aggregates of a provider -----------------------------
    @abc.abstractmethod
    def get_provider_traits(self, uuid: str) -> t.ProviderTraits: ...

    @abc.abstractmethod
    def set_provider_traits(self, uuid: str, generation: int, traits: frozenset[str]) -> int:
        """Replace the provider's traits (TraitNotFound for unknown ones)."""

    @abc.abstractmethod
    def get_provider_aggregates(self, uuid: str) -> t.ProviderAggregates: ...

    @abc.abstractmethod
    def set_provider_aggregates(
        self, uuid: str, generation: int, aggregates: frozenset[str]
    ) -> int: ...

    # -- allocations -----------------------------------------------------
    @abc.abstractmethod
    def get_consumer_allocations(self, consumer_uuid: str) -> t.ConsumerAllocations:
        """What a consumer holds; empty with generation None if unknown."""

    @abc.abstractmethod
    def get_provider_allocations(self, uuid: str) -> dict[str, dict[str, int]]:
        """consumer uuid -> resource class -> amount on this one provider."""

    @abc.abstractmethod
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

    @abc.abstractmethod
    def delete_allocations(self, consumer_uuid: str) -> None:
        """Remove everything a consumer holds, whatever its generation
        (an operator's tool; the tracker writes with generations instead)."""

    # -- usages and candidates -------------------------------------------
    @abc.abstractmethod
    def get_provider_usages(self, uuid: str) -> dict[str, int]:
        """resource class -> amount allocated, for every class in inventory."""

    @abc.abstractmethod
    def get_project_usages(self, project_id: str, user_id: str | None = None) -> dict[str, int]:
        """resource class -> amount allocated to the project's consumers."""

    @abc.abstractmethod
    def get_allocation_candidates(self, query: t.CandidateQuery) -> t.AllocationCandidates:
        """Trees that can satisfy the request, with what to write to claim."""


class BackendLoadError(Exception):
    """The configured backend is not installed or failed to load."""


def load_backend(conf: cfg.ConfigOpts, name: str | None = None) -> PlacementBackend:
    """Instantiate the backend named by ``[placement] backend``."""
    from rtframework import plugins

    name = name or conf.placement.backend
    backend_cls = plugins.load_class(NAMESPACE, name, "placement backend", BackendLoadError)
    return backend_cls(conf)
