"""The allocation candidate request that claims resources on one node.

The node's own tree serves what it offers (``in_tree``). A class no
provider of the tree offers may come from a sharing provider (a storage
pool with MISC_SHARES_VIA_AGGREGATE) in one of the root's aggregates: one
numbered group asks for those classes there. ``in_tree`` alone would
leave such pools out, as Placement does.
"""

from __future__ import annotations

from collections.abc import Mapping

from rtframework.placement import errors as perrors
from rtframework.placement import types as t
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
