"""The allocation candidate request that claims resources on one node.

The node's own tree serves what it offers (``in_tree``). A class no
provider of the tree offers may come from a sharing provider (a storage
pool with MISC_SHARES_VIA_AGGREGATE) in one of the root's aggregates: one
numbered group asks for those classes there. ``in_tree`` alone would
leave such pools out, as Placement does.

A move whose disk is in a pool keeps it there when the destination shares
that pool: :func:`kept_in_pool` asks the pool only for the growth.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from rtframework.placement import errors as perrors
from rtframework.placement import types as t
from rtframework.placement import validation
from rtframework.placement.backend import PlacementBackend

SHARED_GROUP = "shared"


def for_node(backend: PlacementBackend, root_uuid: str,
             resources: Mapping[str, int]) -> t.CandidateQuery:
    wanted = {rc: n for rc, n in resources.items() if n}
    plain = t.CandidateQuery(resources=wanted, in_tree=root_uuid)
    try:
        aggregates = backend.get_provider_aggregates(root_uuid).aggregates
    except perrors.ProviderNotFound:
        return plain
    if not aggregates:
        return plain
    offered: set[str] = set()
    for provider in backend.list_providers(t.ProviderQuery(in_tree=root_uuid)):
        offered.update(backend.get_inventories(provider.uuid).inventories)
    shared = {rc: n for rc, n in wanted.items() if rc not in offered}
    if not shared:
        return plain
    own = {rc: n for rc, n in wanted.items() if rc in offered}
    group = t.RequestGroup(resources=shared, required_traits=frozenset({t.SHARING_TRAIT}),
                           member_of=(frozenset(aggregates),))
    if not own:
        # Nothing from the tree itself: the pool's group names the tree's
        # aggregates and the unnumbered group is left empty.
        return t.CandidateQuery(groups={SHARED_GROUP: group})
    return t.CandidateQuery(resources=own, in_tree=root_uuid, groups={SHARED_GROUP: group})


POOL_GROUP = "pool"


@dataclass(frozen=True)
class KeptInPool:
    """A move's request for the trees that share the pool its disk is in.

    The disk does not move, so the pool is asked only for the growth of
    each class the instance keeps there (nothing when it does not grow);
    ``on_pool`` is what the pool holds for it once the move is over.
    """

    pool_uuid: str
    query: t.CandidateQuery
    on_pool: Mapping[str, int]

    def completed(self, allocations: t.Allocations) -> dict[str, dict[str, int]]:
        """A candidate of :attr:`query` with the pool's whole new amounts."""
        out = {p: dict(r) for p, r in allocations.items()}
        out[self.pool_uuid] = {**out.get(self.pool_uuid, {}), **self.on_pool}
        return out


def kept_in_pool(backend: PlacementBackend, pool_uuid: str, held: Mapping[str, int],
                 resources: Mapping[str, int], *,
                 in_tree: str | None = None) -> KeptInPool | None:
    """The request for ``resources`` on a tree sharing ``pool_uuid``, where
    the consumer already holds ``held`` (None: nothing of the request can
    stay there, nothing else is asked, the pool shares with no tree, or
    the new amount breaks one of the pool's unit rules)."""
    wanted = {rc: n for rc, n in resources.items() if n}
    on_pool = {rc: wanted[rc] for rc in held if rc in wanted}
    try:
        aggregates = backend.get_provider_aggregates(pool_uuid).aggregates
        inventories = backend.get_inventories(pool_uuid).inventories
    except perrors.ProviderNotFound:
        return None
    rest = {rc: n for rc, n in wanted.items() if rc not in on_pool}
    if not on_pool or not rest or not aggregates:
        return None
    if any(rc not in inventories or not validation.fits(
            n, math.inf, 0, inventories[rc].min_unit, inventories[rc].max_unit,
            inventories[rc].step_size) for rc, n in on_pool.items()):
        return None  # the whole amount breaks a unit rule: the plain search says which
    # The growth is asked as a unit the pool hands out (at least min_unit).
    growth = {rc: max(n - held[rc], inventories[rc].min_unit)
              for rc, n in on_pool.items() if n > held[rc]}
    groups = {}
    if growth:
        groups[POOL_GROUP] = t.RequestGroup(resources=growth, in_tree=pool_uuid)
    query = t.CandidateQuery(
        resources=rest,
        member_of=(frozenset(aggregates),), in_tree=in_tree, groups=groups)
    return KeptInPool(pool_uuid, query, on_pool)
