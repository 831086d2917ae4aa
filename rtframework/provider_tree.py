"""The provider tree: what a driver reports for its nodes.

A driver fills one in per node (a root provider, optional children with
their own inventory and traits). The tracker keeps a copy of what it last
sent and compares, so that a periodic run with nothing changed writes
nothing.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from rtframework.placement.types import Inventory


class ProviderTreeError(Exception):
    """The tree was asked for something it does not hold, or would break."""


@dataclass
class ProviderData:
    uuid: str
    name: str
    parent_uuid: str | None = None
    inventory: dict[str, Inventory] = field(default_factory=dict)
    traits: set[str] = field(default_factory=set)
    aggregates: set[str] = field(default_factory=set)


class ProviderTree:
    """Providers keyed by uuid, parents before children in iteration."""

    def __init__(self) -> None:
        self._providers: dict[str, ProviderData] = {}

    # -- building --------------------------------------------------------
    def new_root(self, name: str, uuid: str) -> ProviderData:
        return self._add(ProviderData(uuid=uuid, name=name))

    def new_child(self, name: str, parent_uuid: str, uuid: str) -> ProviderData:
        if parent_uuid not in self._providers:
            raise ProviderTreeError(f"parent provider {parent_uuid} of {name!r} is not in the tree")
        return self._add(ProviderData(uuid=uuid, name=name, parent_uuid=parent_uuid))

    def _add(self, data: ProviderData) -> ProviderData:
        if data.uuid in self._providers:
            raise ProviderTreeError(f"provider {data.uuid} ({data.name!r}) is already in the tree")
        if any(p.name == data.name for p in self._providers.values()):
            raise ProviderTreeError(f"a provider named {data.name!r} is already in the tree")
        self._providers[data.uuid] = data
        return data

    def remove(self, uuid: str) -> None:
        """Remove a provider and its descendants."""
        for child in [p.uuid for p in self._providers.values() if p.parent_uuid == uuid]:
            self.remove(child)
        self._providers.pop(uuid, None)

    def update_inventory(self, uuid: str, inventory: Mapping[str, Inventory]) -> None:
        self.data(uuid).inventory = dict(inventory)

    def update_traits(self, uuid: str, traits: set[str] | frozenset[str]) -> None:
        self.data(uuid).traits = set(traits)

    def add_traits(self, uuid: str, *traits: str) -> None:
        self.data(uuid).traits.update(traits)

    def update_aggregates(self, uuid: str, aggregates: set[str] | frozenset[str]) -> None:
        self.data(uuid).aggregates = set(aggregates)

    # -- reading ---------------------------------------------------------
    def exists(self, uuid: str) -> bool:
        return uuid in self._providers

    def data(self, uuid: str) -> ProviderData:
        try:
            return self._providers[uuid]
        except KeyError:
            raise ProviderTreeError(f"provider {uuid} is not in the tree") from None

    def find_by_name(self, name: str) -> ProviderData:
        for provider in self._providers.values():
            if provider.name == name:
                return provider
        raise ProviderTreeError(f"no provider named {name!r} in the tree")

    def roots(self) -> list[ProviderData]:
        return [p for p in self._providers.values() if p.parent_uuid is None]

    def descendants(self, uuid: str) -> list[ProviderData]:
        """``uuid`` and everything below it, parents first."""
        found = [self.data(uuid)]
        for provider in found:
            found.extend(p for p in self._providers.values() if p.parent_uuid == provider.uuid)
        return found

    def __iter__(self) -> Iterator[ProviderData]:
        """Every provider, parents before children."""
        for root in self.roots():
            yield from self.descendants(root.uuid)

    def __len__(self) -> int:
        return len(self._providers)

    def uuids(self) -> list[str]:
        return [p.uuid for p in self]

    def copy(self) -> ProviderTree:
        return copy.deepcopy(self)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ProviderTree) and self._providers == other._providers

    def changed(self, other: ProviderTree | None) -> list[str]:
        """Uuids whose data differs from ``other`` (or are new), parents
        first; uuids only in ``other`` come last, children first."""
        if other is None:
            return self.uuids()
        changed = [p.uuid for p in self if other._providers.get(p.uuid) != p]
        gone = [u for u in reversed(other.uuids()) if u not in self._providers]
        return changed + gone
