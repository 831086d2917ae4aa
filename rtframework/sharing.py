"""Shared storage pools: providers that share their inventory with every
tree in one of their aggregates (trait MISC_SHARES_VIA_AGGREGATE).

No compute host reports a pool (it belongs to none of them); an operator
makes one, as with ``openstack resource provider create`` and friends, or
with :func:`ensure_pool` (tests, demo and ``rtf simulate`` use it). Hosts
join it by putting their roots in the pool's aggregate (the fake driver's
``[fake_driver] shared_storage_aggregate``).
"""

from __future__ import annotations

from collections.abc import Mapping

from rtframework import retry
from rtframework.placement import errors as perrors
from rtframework.placement import types as t
from rtframework.placement.backend import PlacementBackend

SHARING_TRAIT = t.SHARING_TRAIT


def ensure_pool(backend: PlacementBackend, name: str, aggregate: str,
                inventory: Mapping[str, t.Inventory], *, retries: int = 10) -> str:
    """Create or update the pool named ``name``: its inventory, the sharing
    trait and ``aggregate``; returns its uuid."""
    found = backend.list_providers(t.ProviderQuery(name=name))
    if found:
        uuid = found[0].uuid
    else:
        try:
            uuid = backend.create_provider(name).uuid
        except perrors.DuplicateName:
            uuid = backend.list_providers(t.ProviderQuery(name=name))[0].uuid

    def attempt() -> None:
        held = backend.get_inventories(uuid)
        generation = held.generation
        if dict(held.inventories) != dict(inventory):
            generation = backend.set_inventories(uuid, generation, inventory)
        traits = backend.get_provider_traits(uuid)
        if SHARING_TRAIT not in traits.traits:
            generation = backend.set_provider_traits(
                uuid, traits.generation, traits.traits | {SHARING_TRAIT})
        aggregates = backend.get_provider_aggregates(uuid)
        if aggregate not in aggregates.aggregates:
            backend.set_provider_aggregates(uuid, aggregates.generation,
                                            aggregates.aggregates | {aggregate})

    retry.on_conflict(attempt, retries, f"storage pool {name}")
    return uuid


def node_and_pools(backend: PlacementBackend, root_uuid: str) -> set[str]:
    """The providers of a node's tree and the pools serving it (sharing
    providers in one of its root's aggregates): where a claim on the node
    may take each class."""
    found = {p.uuid for p in backend.list_providers(t.ProviderQuery(in_tree=root_uuid))}
    aggregates = backend.get_provider_aggregates(root_uuid).aggregates
    if aggregates:
        found |= {p.uuid for p in backend.list_providers(t.ProviderQuery(
            member_of=(frozenset(aggregates),), required_traits=frozenset({SHARING_TRAIT})))}
    return found
