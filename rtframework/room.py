"""Why a provider tree cannot hold a request, in words an operator can act on.

A refusal names, for each requested class that fits nowhere, the
providers of the tree and the storage pools serving it (sharing providers
in an aggregate of a provider of the tree) that offer it and why each falls short (full,
``max_unit``, ``step_size``), or that no provider of the tree offers it;
then every provider's free amounts. Only the error path reads this much.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from rtframework.placement import errors as perrors
from rtframework.placement import types as t
from rtframework.placement.backend import PlacementBackend


@dataclass(frozen=True)
class _Offer:
    uuid: str
    name: str
    inventory: t.Inventory
    used: int

    @property
    def free(self) -> int:
        return int(self.inventory.capacity) - self.used

    def shortfall(self, rc: str, amount: int, held: int = 0) -> str | None:
        """Why this provider cannot serve ``amount`` of ``rc``, of which the
        consumer holds ``held`` there already (None: it can)."""
        inv = self.inventory
        if amount > inv.max_unit:
            return f"{rc}={amount} exceeds max_unit {inv.max_unit} on {self.name}"
        if amount < inv.min_unit:
            return f"{rc}={amount} is below min_unit {inv.min_unit} on {self.name}"
        if amount % inv.step_size:
            return f"{rc}={amount} is not a multiple of step_size {inv.step_size} on {self.name}"
        if amount - held > self.free:
            return (f"{self.name} is full for {rc}={amount - held}: {self.free} free of "
                    f"{int(inv.capacity)}")
        return None


def explain(backend: PlacementBackend, root_uuid: str, resources: Mapping[str, int],
            held: Mapping[str, Mapping[str, int]] | None = None) -> str:
    """What stops the tree under ``root_uuid`` holding ``resources``
    (ProviderNotFound when the root is not in placement); ``held``: what
    the consumer holds already and keeps (provider -> class -> amount)."""
    held = held or {}
    backend.get_provider(root_uuid)
    offers: dict[str, list[_Offer]] = {}
    lines = []
    tree = backend.list_providers(t.ProviderQuery(in_tree=root_uuid))
    pools = _pools_of(backend, tree)
    for provider in tree + pools:
        try:
            inventories = backend.get_inventories(provider.uuid).inventories
            usages = backend.get_provider_usages(provider.uuid)
        except perrors.ProviderNotFound:
            continue  # deleted meanwhile
        found = [_Offer(provider.uuid, provider.name, inv, usages.get(rc, 0))
                 for rc, inv in sorted(inventories.items())]
        for rc, offer in zip(sorted(inventories), found, strict=True):
            offers.setdefault(rc, []).append(offer)
        free = ", ".join(f"{rc} {offer.free} free of {int(offer.inventory.capacity)}"
                         for rc, offer in zip(sorted(inventories), found, strict=True))
        lines.append(f"{provider.name}: {free or 'no inventory'}")
    why = []
    for rc, amount in sorted(resources.items()):
        if rc not in offers:
            why.append(f"no provider of the tree {'or its storage pools ' if pools else ''}"
                       f"offers {rc}")
            continue
        reasons = [offer.shortfall(rc, amount, held.get(offer.uuid, {}).get(rc, 0))
                   for offer in offers[rc]]
        if all(reasons):
            why.extend(r for r in reasons if r)
    return "; ".join(why + [f"provider {line}" for line in lines])


def _pools_of(backend: PlacementBackend,
              tree: list[t.ResourceProvider]) -> list[t.ResourceProvider]:
    """The storage pools sharing an aggregate with a provider of ``tree``."""
    aggregates: set[str] = set()
    for provider in tree:
        try:
            aggregates |= backend.get_provider_aggregates(provider.uuid).aggregates
        except perrors.ProviderNotFound:
            continue
    if not aggregates:
        return []
    mine = {p.uuid for p in tree}
    return [p for p in backend.list_providers(t.ProviderQuery(
        member_of=(frozenset(aggregates),), required_traits=frozenset({t.SHARING_TRAIT})))
        if p.uuid not in mine]
