"""Allocation candidates with request groups and sharing providers.

The rules, as OpenStack Placement has them:

* The unnumbered group: each class from one provider, the providers may
  differ per class; a provider of the tree or a sharing provider (trait
  MISC_SHARES_VIA_AGGREGATE) in one of the aggregates of a provider of the
  tree. Its required traits must be on the providers serving it (together),
  forbidden ones on none of them.
* A numbered group: every class from ONE provider (of the tree or a
  sharing one) that has its required traits, none of its forbidden ones,
  is in each ``member_of`` set itself (its root's aggregates do not count
  here, unlike for the unnumbered group) and sits in ``in_tree``'s tree.
  A group without resources only names a provider.
* Forbidden aggregates (``member_of=!agg``): for the unnumbered group no
  provider serving it is in one, nor is the root of the tree (a sharing
  provider's tree being the one it serves); for a numbered group its
  provider's own aggregates only.
* ``group_policy=isolate``: numbered groups on different providers (the
  unnumbered group is exempt).
* Groups that land on one provider add up: the sum must fit the
  provider's free capacity and max_unit.
* ``root_required``: traits the tree's root has (and lacks).
* ``same_subtree``: the providers of those groups all sit under one of them.
* A candidate may be served by sharing providers alone, when a tree links
  them (each is in an aggregate of a provider of the tree) and the tree
  meets the request's tree-wide rules (``root_required``); the same
  allocation is one candidate however many trees link it.

Each tree is combined in Python after reading it with its inventory,
usage, traits and aggregates (a query per batch of trees, and one for
their aggregates when the request or a sharing provider needs them):
slower than the plain search on big clouds, which is why only requests
that need it (or a cloud that has sharing providers) come here. The
sharing providers' trees are read first; then the trees in root order:
all at once without a limit, else in batches sized by the candidates the
trees read so far gave, until the limit is reached.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import sqlalchemy as sa

from rtframework.placement import types as t
from rtframework.placement import validation
from rtframework.placement.sql import models as m
from rtframework.placement.sql import queries

UNNUMBERED = ""
# The trees a limited search reads first: its limit's worth when that is
# fewer than _FIRST_TREES, else as many trees as give the limit at
# _CANDIDATES_PER_TREE each, at least _FIRST_TREES (see _first_size); and
# the most it reads in one batch after that.
_FIRST_TREES = 100
_CANDIDATES_PER_TREE = 4
_MOST_TREES = 1000

_SHARING = (
    sa.select(m.provider_traits.c.resource_provider_id)
    .where(m.provider_traits.c.trait == t.SHARING_TRAIT).limit(1)
)


# The roots of the sharing providers' trees.
_SHARING_ROOTS = (
    sa.select(m.resource_providers.c.root_provider_id).distinct()
    .select_from(m.provider_traits.join(
        m.resource_providers,
        m.resource_providers.c.id == m.provider_traits.c.resource_provider_id))
    .where(m.provider_traits.c.trait == t.SHARING_TRAIT)
)


def sharing_exists(conn: sa.Connection) -> bool:
    """Whether any provider shares its inventory through aggregates."""
    return conn.execute(_SHARING).first() is not None


@functools.lru_cache(maxsize=4)
def _roots(in_tree: bool, limited: bool) -> sa.Select:
    """Root ids after :after in order (at most :count of them when
    ``limited``; only the root of :tree_of's tree with ``in_tree``)."""
    rp = m.resource_providers
    stmt = (sa.select(rp.c.id).where(rp.c.parent_provider_id.is_(None),
                                     rp.c.id > sa.bindparam("after", type_=sa.Integer))
            .order_by(rp.c.id))
    if in_tree:
        tree = rp.alias("tree")
        stmt = stmt.where(rp.c.id == sa.select(tree.c.root_provider_id)
                          .where(tree.c.uuid == sa.bindparam("tree_of")).scalar_subquery())
    return stmt.limit(sa.bindparam("count", type_=sa.Integer)) if limited else stmt


def _root_uuid_of(conn: sa.Connection, uuid: str | None) -> str | None:
    if uuid is None:
        return None
    rp, root = m.resource_providers, m.resource_providers.alias("root")
    found = conn.execute(
        sa.select(root.c.uuid).select_from(rp.join(root, root.c.id == rp.c.root_provider_id))
        .where(rp.c.uuid == uuid)).scalar_one_or_none()
    # An unknown provider: a tree nothing is in.
    return found or f"unknown:{uuid}"


def find(conn: sa.Connection, query: t.CandidateQuery, trees_cls: Any) -> t.AllocationCandidates:
    """Candidates by root provider id, then in the order the groups'
    options combine (providers in id order)."""
    # From here on the query names aggregates by id, as the trees' rows do.
    query = queries.by_aggregate_ids(conn, query)
    groups: dict[str, t.RequestGroup] = {}
    if query.resources or query.required_traits or query.forbidden_traits:
        groups[UNNUMBERED] = t.RequestGroup(
            resources=query.resources, required_traits=query.required_traits,
            forbidden_traits=query.forbidden_traits, member_of=query.member_of,
            in_tree=query.in_tree, forbidden_aggregates=query.forbidden_aggregates)
    groups.update(sorted(query.groups.items()))
    if any(not any_of for g in groups.values() for any_of in g.member_of):
        # Only aggregates no provider is in: nothing can match.
        return t.AllocationCandidates(allocation_requests=(), provider_summaries={})
    tree_roots = {s: _root_uuid_of(conn, g.in_tree) for s, g in groups.items()}
    sharers = trees_cls.load(conn, _SHARING_ROOTS, {}, with_aggregates=True)
    # The sharing providers by aggregate, each with its place in their order.
    shared: dict[str, list[tuple[int, Any]]] = {}
    for at, node in enumerate(n for nodes in sharers.by_root.values() for n in nodes
                              if t.SHARING_TRAIT in n.traits):
        for agg in node.aggregates:
            shared.setdefault(agg, []).append((at, node))
    requests: list[t.AllocationRequest] = []
    summaries: dict[str, t.ProviderSummary] = {}
    # Aggregates matter to a tree when a group names some, or to find the
    # sharing providers it may use.
    with_aggregates = bool(shared) or any(g.member_of or g.forbidden_aggregates
                                          for g in groups.values())
    # Candidates of sharing providers alone, by allocation: several trees
    # may link the same ones.
    shared_only: set[tuple] = set()
    for held, root in _in_root_order(conn, trees_cls, query, sharers, with_aggregates,
                                     lambda: len(requests)):
        search = _TreeSearch(held.by_root[root], root, shared, groups, tree_roots, query)
        left = None if query.limit is None else query.limit - len(requests)
        found = list(itertools.islice(search.new_candidates(shared_only), left))
        if found:
            requests.extend(found)
            # The tree when its own providers serve, and the sharing
            # providers its candidates use.
            if any(p in search.mine for r in found for p in r.allocations):
                held.add_summaries(root, summaries)
            # (A sharing provider near the tree that serves nothing asked
            # stays pending for every tree: then the set is built each time.)
            pending = [node for node in search.near if node.uuid not in summaries]
            if pending:
                used = {p for r in found for p in itertools.chain(
                    r.allocations, *r.mappings.values())}
                for node in pending:
                    if node.uuid in used:
                        summaries[node.uuid] = sharers.summary(node)
        if query.limit is not None and len(requests) >= query.limit:
            break
    return t.AllocationCandidates(allocation_requests=tuple(requests),
                                  provider_summaries=summaries)


def _in_root_order(conn: sa.Connection, trees_cls: Any, query: t.CandidateQuery,
                   sharers: Any, with_aggregates: bool,
                   found: Callable[[], int]) -> Iterator[tuple[Any, int]]:
    """(trees, root) of each tree in root order (``query.in_tree``'s only),
    read in batches while the caller goes on: all at once without a limit,
    else sized by the candidates ``found`` so far (see :func:`_next_size`).
    A batch reads the sharing providers' trees again; the copy read with
    ``sharers`` is the one used."""
    after, read, size = 0, 0, None if query.limit is None else _first_size(query.limit)
    while True:
        params: dict[str, Any] = {"after": after}
        if size is not None:
            params["count"] = size
        if query.in_tree is not None:
            params["tree_of"] = query.in_tree
        trees = trees_cls.load(conn, _roots(query.in_tree is not None, size is not None), params,
                               with_aggregates=with_aggregates)
        batch = sorted(trees.by_root)
        for root in batch:
            yield (sharers if root in sharers.by_root else trees), root
        if size is None or len(batch) < size:
            return
        after, read = batch[-1], read + len(batch)
        size = _next_size(query.limit, found(), read, size)


def _first_size(limit: int) -> int:
    """The trees the first batch of a search limited to ``limit`` reads:
    at most the limit, else max(_FIRST_TREES, limit / 4). Trees with a
    compute node's two NUMA cells give about four candidates each (VCPU
    and memory from either cell): Nova's default limit of 1000 reads 250
    trees first, then a smaller second batch, where a first batch of 100
    (the rule before) was followed by one of about twice that. Trees that
    give more candidates each read more trees than they need."""
    return min(limit, max(_FIRST_TREES, limit // _CANDIDATES_PER_TREE))


def _next_size(limit: int, found: int, read: int, last: int) -> int:
    """How many trees the next batch reads: as many as the candidates still
    wanted need at the rate the trees read so far gave them (a quarter
    more), or twice the last batch while none gave any; at most
    _MOST_TREES."""
    if not found:
        return min(last * 2, _MOST_TREES)
    return max(1, min(_MOST_TREES, math.ceil((limit - found) * read / found * 1.25)))


def member_of_met(member_of: tuple[frozenset[str], ...], own: frozenset[str],
                  root: frozenset[str]) -> bool:
    """A provider of the unnumbered group meets ``member_of``: its ``own``
    aggregates meet every any-of set, or its ``root``'s aggregates do."""
    return (all(own & any_of for any_of in member_of)
            or all(root & any_of for any_of in member_of))


class _TreeSearch:
    """Every way one tree (with the sharing providers it may use) meets the
    request's groups."""

    def __init__(self, tree: list, root: int, shared: dict[str, list[tuple[int, Any]]],
                 groups: dict[str, t.RequestGroup],
                 tree_roots: dict[str, str | None], query: t.CandidateQuery) -> None:
        self.tree = tree
        self.query = query
        self.groups = groups
        self.tree_roots = tree_roots
        self.top = next(n for n in tree if n.id == root)
        self.mine = {n.uuid for n in tree}
        aggregates = frozenset().union(*(n.aggregates for n in tree))
        near = {at: node for agg in aggregates for at, node in shared.get(agg, ())
                if node.uuid not in self.mine}
        # The sharing providers of other trees it may use, in their order.
        self.near = [near[at] for at in sorted(near)]
        self.pool = tree + self.near

    @functools.cached_property
    def by_uuid(self) -> dict[str, Any]:
        """The tree's providers by uuid (for same_subtree)."""
        return {n.uuid: n for n in self.tree}

    @functools.cached_property
    def pool_by_uuid(self) -> dict[str, Any]:
        """The tree's providers and the sharing providers near it, by uuid
        (for amounts that add up on one provider)."""
        return {n.uuid: n for n in self.pool}

    def _narrows(self, group: t.RequestGroup, suffix: str) -> bool:
        """``group`` may rule out a provider of the pool: it names one of
        the things :meth:`_in_tree` and :meth:`_covered` check (keep the
        three in step)."""
        return bool(self.tree_roots[suffix] is not None or group.forbidden_traits
                    or group.forbidden_aggregates or group.member_of)

    def _covered(self, node, group: t.RequestGroup, suffix: str) -> bool:
        """Traits, aggregates and tree of ``group`` allow ``node``."""
        if group.forbidden_traits and node.traits & group.forbidden_traits:
            return False
        if group.forbidden_aggregates:
            banned = node.aggregates
            if suffix == UNNUMBERED:
                banned = banned | self.top.aggregates
            if banned & group.forbidden_aggregates:
                return False
        if group.member_of:
            # The root's aggregates span the tree for the unnumbered group
            # only; a numbered group's provider must be in one itself, as
            # in Placement.
            root = (self.top.aggregates if suffix == UNNUMBERED and node.uuid in self.mine
                    else frozenset())
            if not member_of_met(group.member_of, node.aggregates, root):
                return False
        return True

    def _in_tree(self, node, suffix: str) -> bool:
        wanted = self.tree_roots[suffix]
        return wanted is None or node.root_uuid == wanted

    @staticmethod
    def _fits(node, rc: str, amount: int) -> bool:
        found = node.resources.get(rc)  # capacity, used, min_unit, max_unit, step_size
        return found is not None and validation.fits(amount, *found)

    def _options(self, suffix: str, group: t.RequestGroup) -> list[list[Any]]:
        """Per slot of the group, the providers that may fill it: one slot
        per class for the unnumbered group, one slot for a numbered one."""
        pool = self.pool
        if self._narrows(group, suffix):
            pool = [n for n in pool
                    if self._in_tree(n, suffix) and self._covered(n, group, suffix)]
        if suffix == UNNUMBERED:
            slots = [[n for n in pool if self._fits(n, rc, amount)]
                     for rc, amount in sorted(group.resources.items())]
            if not group.resources:
                # Traits only: some provider of the tree has them.
                slots = [[n for n in pool if n.uuid in self.mine
                          and group.required_traits <= n.traits]]
            return slots
        if not group.resources and not (group.required_traits or group.member_of):
            # Placement names a provider for a group without resources by
            # its required traits or member_of only: without them, none.
            return [[]]
        return [[n for n in pool
                 if group.required_traits <= n.traits
                 and all(self._fits(n, rc, amount) for rc, amount in group.resources.items())]]

    def new_candidates(self, shared_only: set[tuple]) -> Iterator[t.AllocationRequest]:
        """:meth:`candidates`, less those of sharing providers alone that
        ``shared_only`` holds already (it is added to)."""
        for request in self.candidates():
            if all(t.SHARING_TRAIT in self.pool_by_uuid[p].traits
                   for p in itertools.chain(request.allocations, *request.mappings.values())):
                key = (tuple(sorted((p, tuple(sorted(r.items())))
                                    for p, r in request.allocations.items())),
                       tuple(sorted(request.mappings.items())))
                if key in shared_only:
                    continue
                shared_only.add(key)
            yield request

    def candidates(self) -> Iterator[t.AllocationRequest]:
        query = self.query
        if not query.root_required <= self.top.traits or query.root_forbidden & self.top.traits:
            return
        slots: list[tuple[str, str | None, list]] = []
        for suffix, group in self.groups.items():
            options = self._options(suffix, group)
            if suffix == UNNUMBERED and group.resources:
                rcs: Sequence[str | None] = sorted(group.resources)
            else:
                rcs = [None]
            for rc, choices in zip(rcs, options, strict=True):
                if not choices:
                    return
                slots.append((suffix, rc, choices))
        if (list(self.groups) == [UNNUMBERED] and self.groups[UNNUMBERED].resources
                and not query.same_subtree):
            yield from self._unnumbered(slots)
            return
        # Two picks never make the same request: the mappings name each
        # numbered group's provider, and what is left of the allocations
        # names the provider of each unnumbered class (amounts are >= 1).
        for chosen in itertools.product(*(choices for _, _, choices in slots)):
            picked = [(suffix, rc, node) for (suffix, rc, _), node in zip(slots, chosen,
                                                                           strict=True)]
            request = self._request(picked)
            if request is not None:
                yield request

    def _unnumbered(self, slots: list[tuple[str, str | None, list]]
                    ) -> Iterator[t.AllocationRequest]:
        """:meth:`_request` of every pick when the unnumbered group with
        resources is the only group (most requests): one slot per class,
        so no provider is asked for a class twice and nothing adds up."""
        group = self.groups[UNNUMBERED]
        required = group.required_traits
        amounts = [(rc, group.resources[rc]) for _, rc, _ in slots]
        for chosen in itertools.product(*(choices for _, _, choices in slots)):
            allocations: dict[str, dict[str, int]] = {}
            for (rc, amount), node in zip(amounts, chosen, strict=True):
                held = allocations.get(node.uuid)
                if held is None:
                    allocations[node.uuid] = {rc: amount}
                else:
                    held[rc] = amount
            if required and not required <= frozenset().union(*(n.traits for n in chosen)):
                continue
            yield t.AllocationRequest(allocations=allocations,
                                      mappings={UNNUMBERED: tuple(allocations)})

    def _request(self, picked: list) -> t.AllocationRequest | None:
        query = self.query
        by_group: dict[str, list] = {}
        for suffix, _, node in picked:
            by_group.setdefault(suffix, []).append(node)
        unnumbered = self.groups.get(UNNUMBERED)
        if unnumbered is not None and unnumbered.resources and unnumbered.required_traits:
            have = frozenset().union(*(n.traits for n in by_group[UNNUMBERED]))
            if not unnumbered.required_traits <= have:
                return None
        if query.group_policy == "isolate":
            numbered = [by_group[s][0].uuid for s in self.groups if s != UNNUMBERED]
            if len(set(numbered)) != len(numbered):
                return None
        allocations: dict[str, dict[str, int]] = {}
        summed = []  # (provider, class) asked of by more than one slot
        for suffix, rc, node in picked:
            group = self.groups[suffix]
            amounts = {rc: group.resources[rc]} if rc is not None and suffix == UNNUMBERED \
                else dict(group.resources) if suffix != UNNUMBERED else {}
            slot = allocations.setdefault(node.uuid, {})
            for cls, amount in amounts.items():
                if cls in slot:
                    summed.append((node.uuid, cls))
                slot[cls] = slot.get(cls, 0) + amount
        allocations = {p: r for p, r in allocations.items() if r}
        # Each slot's provider fits its own amount (see _options): only sums
        # are left to check.
        for provider, rc in summed:
            if not self._fits(self.pool_by_uuid[provider], rc, allocations[provider][rc]):
                return None
        for suffixes in query.same_subtree:
            if not self._same_subtree([by_group[s][0] for s in sorted(suffixes)]):
                return None
        mappings = {s: tuple(dict.fromkeys(n.uuid for n in nodes))
                    for s, nodes in by_group.items()}
        return t.AllocationRequest(allocations=allocations, mappings=mappings)

    def _ancestors(self, node) -> list[str]:
        """``node`` and its ancestors, itself first."""
        chain = [node.uuid]
        while node.parent_uuid is not None and node.parent_uuid in self.by_uuid:
            node = self.by_uuid[node.parent_uuid]
            chain.append(node.uuid)
        return chain

    def _same_subtree(self, nodes: list) -> bool:
        if any(n.uuid not in self.mine for n in nodes):
            return len({n.uuid for n in nodes}) == 1
        chains = [self._ancestors(n) for n in nodes]
        return any(all(n.uuid in chain for chain in chains) for n in nodes)
