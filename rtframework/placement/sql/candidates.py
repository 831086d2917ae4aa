"""Allocation candidates for one unnumbered request group.

A candidate is one provider tree (a root and its descendants) that can
serve every requested class, each class from a single provider of the tree.
Rules taken from OpenStack Placement's unnumbered group:

* ``member_of``: an aggregate on the root spans the whole tree, one on a
  non-root provider covers only that provider; every provider that serves
  a class must be covered by at least one aggregate of each any-of set.
* ``required_traits``: traits do not spread over the tree; each required
  trait must be on at least one of the providers that serve resources in
  the candidate (not merely somewhere in the tree).
* ``forbidden_traits``: none of the providers that serve resources in the
  candidate may have one.
* ``in_tree``: only the tree of that provider.

Sharing providers (MISC_SHARES_VIA_AGGREGATE) are not modelled.

The search runs in SQL in two steps: first the roots (in id order, cut by
``limit`` in the database) whose tree has an eligible provider for every
class, as correlated EXISTS clauses, so that a limit of 10 stops after ten
matching trees whatever the cloud size; then, for those trees only, the
eligible providers per class, combined in Python. Summaries of the trees
returned come from a few more small queries.
"""

from __future__ import annotations

import functools
import itertools
from collections import defaultdict

import sqlalchemy as sa

from rtframework.placement import errors
from rtframework.placement import types as t
from rtframework.placement.sql import models as m
from rtframework.placement.sql import queries, validation


def _check(conn: sa.Connection, query: t.CandidateQuery) -> None:
    if not query.resources:
        raise errors.InvalidRequest("an allocation candidate request needs resources")
    for rc, amount in query.resources.items():
        validation.check_resource_class_name(rc)
        if not isinstance(amount, int) or isinstance(amount, bool) or amount < 1:
            raise errors.InvalidRequest(f"requested amount of {rc} must be >= 1, got {amount!r}")
    if query.limit is not None and query.limit < 1:
        raise errors.InvalidRequest(f"limit must be >= 1, got {query.limit}")
    custom = [rc for rc in query.resources if rc not in validation.STANDARD_CLASSES]
    missing = set(custom) - queries.custom_names(conn, m.resource_classes, custom)
    if missing:
        raise errors.ResourceClassNotFound(
            f"resource class(es) {', '.join(sorted(missing))} not found"
        )
    traits = query.required_traits | query.forbidden_traits
    custom = [n for n in traits if n not in validation.STANDARD_TRAITS]
    unknown = set(custom) - queries.custom_names(conn, m.traits, custom)
    if unknown:
        raise errors.TraitNotFound(f"trait(s) {', '.join(sorted(unknown))} not found")


def _eligible(rc: str, amount: int, query: t.CandidateQuery) -> sa.Select:
    """(pid, root) of providers with room for ``amount`` of ``rc`` that may
    serve it under the query's member_of and forbidden traits."""
    inv, a, rp = m.inventories, m.allocations, m.resource_providers
    used = (
        sa.select(sa.func.coalesce(sa.func.sum(a.c.used), 0))
        .where(a.c.resource_provider_id == inv.c.resource_provider_id,
               a.c.resource_class == rc)
        .scalar_subquery()
    )
    stmt = (
        sa.select(inv.c.resource_provider_id.label("pid"), rp.c.root_provider_id.label("root"))
        .select_from(inv.join(rp, rp.c.id == inv.c.resource_provider_id))
        .where(
            inv.c.resource_class == rc,
            inv.c.min_unit <= amount,
            inv.c.max_unit >= amount,
            sa.literal(amount) % inv.c.step_size == 0,
            (inv.c.total - inv.c.reserved) * inv.c.allocation_ratio >= used + amount,
        )
    )
    pa, agg = m.provider_aggregates, m.placement_aggregates
    for any_of in query.member_of:
        members = (
            sa.select(pa.c.resource_provider_id)
            .select_from(pa.join(agg, pa.c.aggregate_id == agg.c.id))
            .where(agg.c.uuid.in_(sorted(any_of)))
        )
        # An aggregate on the root covers the whole tree.
        stmt = stmt.where(sa.or_(rp.c.id.in_(members), rp.c.root_provider_id.in_(members)))
    if query.forbidden_traits:
        pt = m.provider_traits
        stmt = stmt.where(rp.c.id.not_in(
            sa.select(pt.c.resource_provider_id)
            .where(pt.c.trait.in_(sorted(query.forbidden_traits)))
        ))
    return stmt


@functools.lru_cache(maxsize=256)
def _roots_statement(
    resources: tuple[tuple[str, int], ...], member_of: tuple[frozenset[str], ...],
    required: frozenset[str], forbidden: frozenset[str], in_tree: bool, limited: bool,
    dialect: str,
) -> sa.Select:
    """Roots, in id order after :after, whose tree has an eligible provider
    for every class and every required trait somewhere (the exact trait
    rule is checked per combination afterwards).

    Cached per request shape: building the expression costs more than
    running it.
    """
    query = t.CandidateQuery(resources=dict(resources), member_of=member_of,
                             required_traits=required, forbidden_traits=forbidden)
    root = m.resource_providers.alias("candidate_root")
    pt, rp = m.provider_traits, m.resource_providers
    stmt = sa.select(root.c.id).where(
        root.c.parent_provider_id.is_(None), root.c.id > sa.bindparam("after")
    )
    if in_tree:
        stmt = stmt.where(root.c.id == sa.bindparam("tree_root"))
    def exists(sub: sa.Select):
        if limited and dialect == "postgresql":
            # OFFSET 0 keeps PostgreSQL from turning the EXISTS into a
            # semi-join over every provider: as a per-root subplan, the scan
            # of roots in id order stops after `batch` matches. Without a
            # limit the semi-join is the better plan.
            sub = sub.offset(0)
        return sub.exists()

    for rc, amount in resources:
        eligible = _eligible(rc, amount, query)
        stmt = stmt.where(exists(eligible.where(rp.c.root_provider_id == root.c.id)))
    for trait in sorted(required):
        stmt = stmt.where(exists(
            sa.select(pt.c.resource_provider_id)
            .select_from(pt.join(rp, rp.c.id == pt.c.resource_provider_id))
            .where(pt.c.trait == trait, rp.c.root_provider_id == root.c.id)
        ))
    stmt = stmt.order_by(root.c.id)
    if limited:
        stmt = stmt.limit(sa.bindparam("batch"))
    return stmt


def _roots(conn: sa.Connection, query: t.CandidateQuery, tree_root: int | None, after: int,
           batch: int | None) -> list[int]:
    stmt = _roots_statement(
        tuple(sorted(query.resources.items())), tuple(sorted(query.member_of, key=sorted)),
        frozenset(query.required_traits), frozenset(query.forbidden_traits),
        tree_root is not None, batch is not None, conn.dialect.name,
    )
    params = {"after": after, "tree_root": tree_root, "batch": batch}
    return list(conn.execute(stmt, {k: v for k, v in params.items() if v is not None}).scalars())


def find(conn: sa.Connection, query: t.CandidateQuery) -> t.AllocationCandidates:
    """Candidates in a stable order: by root provider id, then by the ids
    of the providers serving each class (classes in name order)."""
    _check(conn, query)
    rp = m.resource_providers
    tree_root = None
    if query.in_tree is not None:
        tree_root = conn.execute(
            sa.select(rp.c.root_provider_id).where(rp.c.uuid == query.in_tree)
        ).scalar_one_or_none()
        if tree_root is None:
            return t.AllocationCandidates(allocation_requests=(), provider_summaries={})
    requests: list[t.AllocationRequest] = []
    summaries: dict[str, t.ProviderSummary] = {}
    after = 0
    while query.limit is None or len(requests) < query.limit:
        # A matching tree gives at least one candidate, except when required
        # traits sit only on providers that serve nothing: then fetch more.
        batch = None if query.limit is None else query.limit - len(requests)
        roots = _roots(conn, query, tree_root, after, batch)
        if not roots:
            break
        after = roots[-1]
        trees = _Trees.load(conn, roots, with_aggregates=bool(query.member_of))
        for root in roots:
            found = 0
            for allocations in trees.candidates(root, query):
                requests.append(t.AllocationRequest(allocations=allocations))
                found += 1
                if query.limit is not None and len(requests) >= query.limit:
                    break
            if found:
                summaries.update(trees.summaries(root))
            if query.limit is not None and len(requests) >= query.limit:
                break
        if batch is None:
            break
    return t.AllocationCandidates(allocation_requests=tuple(requests),
                                  provider_summaries=summaries)


_TREE = (
    queries.provider_select()
    .add_columns(m.resource_providers.c.root_provider_id.label("root_id"))
    .where(m.resource_providers.c.root_provider_id.in_(sa.bindparam("roots", expanding=True)))
)


class _Trees:
    """Everything about a few trees, read in a handful of queries, to
    combine their providers in Python."""

    def __init__(self, rows, inventories, usages, traits, aggregates) -> None:
        self.rows = rows
        self.inventories = inventories
        self.usages = usages
        self.traits = traits
        self.aggregates = aggregates
        self.by_root: dict[int, list] = defaultdict(list)
        for row in rows:
            self.by_root[row.root_id].append(row)

    @classmethod
    def load(cls, conn: sa.Connection, roots: list[int], *, with_aggregates: bool) -> _Trees:
        rows = conn.execute(_TREE, {"roots": roots}).all()
        ids = [row.id for row in rows]
        aggregates: dict[int, set[str]] = defaultdict(set)
        if with_aggregates:
            pa, agg = m.provider_aggregates, m.placement_aggregates
            for pid, uuid in conn.execute(
                sa.select(pa.c.resource_provider_id, agg.c.uuid)
                .select_from(pa.join(agg, pa.c.aggregate_id == agg.c.id))
                .where(pa.c.resource_provider_id.in_(ids))
            ):
                aggregates[pid].add(uuid)
        return cls(rows, queries.inventories_of(conn, ids), queries.usages_of(conn, ids),
                   queries.traits_of(conn, ids), aggregates)

    def _serves(self, row, rc: str, amount: int, query: t.CandidateQuery) -> bool:
        inv = self.inventories.get(row.id, {}).get(rc)
        if inv is None or not validation.fits(inv, self.usages.get((row.id, rc), 0), amount):
            return False
        if self.traits[row.id] & query.forbidden_traits:
            return False
        mine = self.aggregates.get(row.id, set()) | self.aggregates.get(row.root_id, set())
        return all(mine & any_of for any_of in query.member_of)

    def candidates(self, root: int, query: t.CandidateQuery):
        """Allocation mappings for one tree, providers in id order."""
        classes = sorted(query.resources)
        tree = self.by_root[root]
        options = [
            [row for row in tree if self._serves(row, rc, query.resources[rc], query)]
            for rc in classes
        ]
        for chosen in itertools.product(*options):
            if query.required_traits:
                have = frozenset().union(*(self.traits[row.id] for row in chosen))
                if not query.required_traits <= have:
                    continue
            allocations: dict[str, dict[str, int]] = defaultdict(dict)
            for rc, row in zip(classes, chosen, strict=True):
                allocations[row.uuid][rc] = query.resources[rc]
            yield dict(allocations)

    def summaries(self, root: int) -> dict[str, t.ProviderSummary]:
        return {
            row.uuid: t.ProviderSummary(
                uuid=row.uuid, root_uuid=row.root_uuid, parent_uuid=row.parent_uuid,
                resources={
                    rc: t.ResourceSummary(capacity=int(inv.capacity),
                                          used=self.usages.get((row.id, rc), 0))
                    for rc, inv in self.inventories.get(row.id, {}).items()
                },
                traits=self.traits[row.id],
            )
            for row in self.by_root[root]
        }
