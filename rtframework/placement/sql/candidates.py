"""Allocation candidates for one unnumbered request group.

A candidate is one provider tree (a root and its descendants) that can
serve every requested class, each class from a single provider of the tree.
Rules taken from OpenStack Placement's unnumbered group:

* ``member_of``: every provider that serves a class is in an aggregate of
  each any-of set itself, or its root is (an aggregate on the root spans
  the whole tree); the provider's and its root's aggregates are not mixed
  to meet two sets.
* ``required_traits``: traits do not spread over the tree; each required
  trait must be on at least one of the providers that serve resources in
  the candidate (not merely somewhere in the tree).
* ``forbidden_traits``: none of the providers that serve resources in the
  candidate may have one.
* ``forbidden_aggregates`` (``member_of=!agg``): no provider that serves a
  class is in one, and neither is the root of the tree (an aggregate on
  the root spans the whole tree).
* ``in_tree``: only the tree of that provider.

Numbered groups, ``group_policy``, ``root_required``, ``same_subtree`` and
sharing providers (MISC_SHARES_VIA_AGGREGATE) are served by
:mod:`rtframework.placement.sql.granular`: this module's search handles a
request of one unnumbered group in a cloud without sharing providers.

The search is one statement: the roots whose tree has an eligible provider
for every class (the eligible inventory rows grouped by root, in root
order), joined to every provider of those trees with inventory, stored
usage and traits (with ``member_of`` or forbidden aggregates one more
reads their aggregates, by id); the providers are then combined in
Python. With a limit
the database walks the providers in root order and stops after that many
matching trees: a limit of 10 stops at the tenth.

"""

from __future__ import annotations

import functools
import itertools
import operator
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

import sqlalchemy as sa

from rtframework.placement import types as t
from rtframework.placement import validation
from rtframework.placement.sql import granular, queries
from rtframework.placement.sql import models as m


def _check(conn: sa.Connection, query: t.CandidateQuery) -> None:
    """What validation.candidate_query cannot know: names the database lacks."""
    groups = [query, *query.groups.values()]
    traits = frozenset().union(*(g.required_traits | g.forbidden_traits for g in groups),
                               query.root_required, query.root_forbidden)
    queries.check_known_names(conn, {rc for g in groups for rc in g.resources}, traits)


def _eligible(resources: tuple[tuple[str, int], ...], query: t.CandidateQuery) -> sa.Select:
    """(pid, root, class) of inventories with room for the amount asked of
    their class (by the usage stored with them) on providers that may
    serve it under the query's member_of and forbidden traits."""
    inv, rp = m.inventories, m.resource_providers
    fits = [sa.and_(inv.c.resource_class == rc, *queries.fits_clauses(inv.c.used, amount))
            for rc, amount in resources]
    stmt = (
        sa.select(inv.c.resource_provider_id.label("pid"), rp.c.root_provider_id.label("root"),
                  inv.c.resource_class)
        .select_from(inv.join(rp, rp.c.id == inv.c.resource_provider_id))
        .where(sa.or_(*fits))
    )
    pa, agg = m.provider_aggregates, m.placement_aggregates
    for any_of in query.member_of:
        members = (
            sa.select(pa.c.resource_provider_id)
            .select_from(pa.join(agg, pa.c.aggregate_id == agg.c.id))
            .where(agg.c.uuid.in_(sorted(any_of)))
        )
        # An aggregate on the root covers the whole tree (that the provider
        # or its root alone meets every set is checked in Python).
        stmt = stmt.where(sa.or_(rp.c.id.in_(members), rp.c.root_provider_id.in_(members)))
    if query.forbidden_aggregates:
        banned = (
            sa.select(pa.c.resource_provider_id)
            .select_from(pa.join(agg, pa.c.aggregate_id == agg.c.id))
            .where(agg.c.uuid.in_(sorted(query.forbidden_aggregates)))
        )
        # ... and so does a forbidden one: neither the provider nor its root.
        stmt = stmt.where(rp.c.id.not_in(banned), rp.c.root_provider_id.not_in(banned))
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
    required: frozenset[str], forbidden: frozenset[str], banned: frozenset[str],
    in_tree: bool, limited: bool,
) -> sa.Select:
    """Roots, in id order after :after (at most :batch of them when
    ``limited``), whose tree has an eligible provider for every class and
    every required trait somewhere (for a tree with children the exact
    trait rule is checked per combination afterwards; for a provider
    without children this check is the rule): the eligible inventory rows
    grouped by root.

    With a limit the planners walk the providers in root order and stop
    after :batch groups; ``>=`` says the same as ``=`` (only requested
    classes are eligible) but lets PostgreSQL estimate the groups that pass
    instead of guessing almost none and sorting the whole cloud.
    Cached per request shape: building the expression costs more than
    running it.
    """
    query = t.CandidateQuery(resources=dict(resources), member_of=member_of,
                             required_traits=required, forbidden_traits=forbidden,
                             forbidden_aggregates=banned)
    pt, rp = m.provider_traits, m.resource_providers
    eligible = _eligible(resources, query).where(rp.c.root_provider_id > sa.bindparam("after"))
    if in_tree:
        eligible = eligible.where(rp.c.root_provider_id == sa.bindparam("tree_root"))
    for trait in sorted(required):
        having = rp.alias("having_trait")
        eligible = eligible.where(rp.c.root_provider_id.in_(
            sa.select(having.c.root_provider_id)
            .select_from(pt.join(having, having.c.id == pt.c.resource_provider_id))
            .where(pt.c.trait == trait)
        ))
    root = rp.c.root_provider_id
    stmt = (
        eligible.with_only_columns(root.label("root")).group_by(root)
        .having(_serves_every_class(resources)).order_by(root)
    )
    return stmt.limit(sa.bindparam("batch")) if limited else stmt


def _serves_every_class(resources: tuple[tuple[str, int], ...]) -> sa.ColumnElement:
    """A group of eligible rows has every requested class: one flag per
    class, summed, so the planners read it as one comparison.

    It says what ``count(DISTINCT resource_class) >= n`` says without the
    sort per group that DISTINCT costs on PostgreSQL (15): a limited
    search that passes thousands of full trees sorted each one's rows. One
    comparison of a sum keeps the estimate of the groups that pass that
    the count gave; each flag compared with 1 on its own makes
    PostgreSQL guess almost none pass (a default selectivity per
    equality), and plan a sort of every root even for limit 10."""
    rc = m.inventories.c.resource_class
    flags = [sa.func.max(sa.case((rc == name, 1), else_=0)) for name, _amount in resources]
    return functools.reduce(operator.add, flags) >= len(flags)


def _without_semijoins(conn: sa.Connection, shape: tuple, params: dict) -> Sequence[tuple]:
    """MariaDB answers a limited search's required-trait ``IN``
    subqueries as semi-joins: it joins every tree with the trait and groups
    them all before it cuts at the limit (limit 10 with a trait on one
    provider in ten joined a thousand trees at 10,000 providers). With
    semi-joins off for this one statement it builds the subquery's set once
    and probes it as the walk in root order goes (benchmarks/candidates.py,
    limit 10 with the trait, on MariaDB). The
    aggregate subqueries (under OR, or NOT IN) never become semi-joins."""
    state = _mariadb_search(shape, conn.dialect).construct_expanded_state(params)
    values = state.parameters
    if conn.dialect.positional:
        values = tuple(values[name] for name in state.positiontup)
    return _tuples(conn.exec_driver_sql(
        "SET STATEMENT optimizer_switch='semijoin=off' FOR " + state.statement, values))


def _tuples(result: sa.CursorResult) -> Sequence[tuple]:
    """A search's rows as the driver's own tuples: a limit-1000 search reads
    3,000 rows, and SQLAlchemy's Row objects around them cost a fifth of
    its client time (the columns are plain strings and numbers, which the
    drivers return as they are). A driver error while fetching goes
    through SQLAlchemy's handling as it would from ``Result.all()``
    (sqlite3 runs the statement as its rows are fetched)."""
    options = result.context.execution_options
    try:
        if options.get("stream_results") or options.get("yield_per"):
            # SQLAlchemy has buffered rows of its own: read them through it.
            return [tuple(row) for row in result]
        cursor = result.cursor
        try:
            return cursor.fetchall()
        except result.context.dialect.loaded_dbapi.Error as exc:
            result.cursor_strategy.handle_exception(result, cursor, exc)
            raise  # not reached: the handler raises SQLAlchemy's error
    finally:
        result.close()


@functools.lru_cache(maxsize=256)
def _mariadb_search(shape: tuple, dialect: sa.Dialect) -> sa.engine.Compiled:
    return _search_statement(shape, True, False).compile(dialect=dialect)


def _trees_of(roots: sa.FromClause, lateral: bool) -> sa.Select:
    """Per provider of the trees of the ``roots`` subquery's ids, one row per
    inventory class (or one row without): ids, uuid, the inventory with its
    stored usage, and the provider's traits as one comma-separated string
    (trait names have no commas). Parent and root uuids are the trees' own
    rows, so no join of the provider table with itself is needed.

    With ``lateral`` (PostgreSQL) the traits are gathered once per provider
    rather than once per row: a limit-1000 search returns 3,000 rows.
    """
    rp, inv, pt = m.resource_providers, m.inventories, m.provider_traits
    names = (sa.select(sa.func.aggregate_strings(pt.c.trait, ",").label("traits"))
             .where(pt.c.resource_provider_id == rp.c.id))
    if lateral:
        names = names.lateral("provider_trait_names")
        source = rp.outerjoin(names, sa.true()).outerjoin(
            inv, inv.c.resource_provider_id == rp.c.id)
        traits = names.c.traits
    else:
        source = rp.outerjoin(inv, inv.c.resource_provider_id == rp.c.id)
        traits = names.scalar_subquery().label("traits")
    stmt = sa.select(rp.c.id, rp.c.uuid, rp.c.parent_provider_id, rp.c.root_provider_id,
                     inv.c.resource_class, inv.c.total, inv.c.reserved, inv.c.min_unit,
                     inv.c.max_unit, inv.c.step_size, inv.c.allocation_ratio, inv.c.used,
                     traits)
    stmt = stmt.select_from(roots.join(source, rp.c.root_provider_id == list(roots.c)[0]))
    return stmt.order_by(rp.c.id, inv.c.resource_class)  # summaries list classes in order


# (provider id, aggregate id): by id, no join with the aggregates table
# (see queries.by_aggregate_ids).
_pa = m.provider_aggregates
_MEMBERSHIPS = sa.select(_pa.c.resource_provider_id, _pa.c.aggregate_id)


_MEMBERSHIPS_OF = _MEMBERSHIPS.where(
    _pa.c.resource_provider_id.in_(sa.bindparam("ids", expanding=True)))


def _memberships_of(conn: sa.Connection, ids: list[int]) -> Iterator[tuple[int, int]]:
    """(provider id, aggregate id) of the providers ``ids``: on SQLite in
    pieces of queries.SQLITE_BOUND_VALUES, elsewhere in one statement (the
    other drivers put the values into the statement's text themselves)."""
    step = queries.SQLITE_BOUND_VALUES if conn.dialect.name == "sqlite" else len(ids) or 1
    for start in range(0, len(ids), step):
        yield from conn.execute(_MEMBERSHIPS_OF, {"ids": ids[start:start + step]})


@functools.lru_cache(maxsize=64)
def _trees_and_memberships(roots: sa.Select, lateral: bool) -> tuple[sa.Select, sa.Select]:
    """The trees of the roots ``roots`` selects, and (provider id,
    aggregate id) of their providers in a join of its own: a lookup per
    provider is planned as a scan of the whole table while it is small.
    Cached by ``roots`` itself: callers pass statements built once."""
    rp = m.resource_providers
    selected = roots.subquery("roots")
    memberships = _MEMBERSHIPS.select_from(
        selected.join(rp, rp.c.root_provider_id == list(selected.c)[0])
        .join(_pa, _pa.c.resource_provider_id == rp.c.id))
    return _trees_of(selected, lateral), memberships


def _lateral(conn: sa.Connection) -> bool:
    return conn.dialect.name == "postgresql"


@functools.lru_cache(maxsize=256)
def _search_statement(shape: tuple, limited: bool, lateral: bool) -> sa.Select:
    """The matching roots and their trees in one statement: the roots in
    id order after :after, at most :batch of them when ``limited``."""
    return _trees_of(_roots_statement(*shape, limited).subquery("roots"), lateral)


def find(conn: sa.Connection, query: t.CandidateQuery) -> t.AllocationCandidates:
    """Candidates in a stable order: by root provider id, then by the ids
    of the providers serving each class (classes in name order)."""
    _check(conn, query)
    if query.granular or granular.sharing_exists(conn):
        return granular.find(conn, query, _Trees)
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
    requested = tuple(sorted(query.resources.items()))
    shape = (requested, tuple(sorted(query.member_of, key=sorted)),
             frozenset(query.required_traits), frozenset(query.forbidden_traits),
             frozenset(query.forbidden_aggregates), tree_root is not None)
    by_ids = queries.by_aggregate_ids(conn, query)
    while query.limit is None or len(requests) < query.limit:
        # A matching tree gives at least one candidate, except when required
        # traits sit only on providers that serve nothing: then fetch more.
        batch = None if query.limit is None else query.limit - len(requests)
        params = {"after": after, "batch": batch}
        if tree_root is not None:
            params["tree_root"] = tree_root
        mariadb = getattr(conn.dialect, "is_mariadb", False)
        if batch is not None and query.required_traits and mariadb:
            rows = _without_semijoins(conn, shape, params)
        else:
            rows = _tuples(conn.execute(
                _search_statement(shape, batch is not None, _lateral(conn)), params))
        trees = _Trees.from_rows(rows)
        roots = sorted(trees.by_root)
        if not roots:
            break
        if query.member_of or query.forbidden_aggregates:
            trees.add_aggregates(_memberships_of(conn, trees.provider_ids()))
        after = roots[-1]
        for root in roots:
            found = 0
            for allocations in trees.candidates(root, by_ids, requested):
                requests.append(t.AllocationRequest(allocations=allocations,
                                                    mappings={"": tuple(allocations)}))
                found += 1
                if query.limit is not None and len(requests) >= query.limit:
                    break
            if found:
                trees.add_summaries(root, summaries)
            if query.limit is not None and len(requests) >= query.limit:
                break
        if batch is None:
            break
    return t.AllocationCandidates(allocation_requests=tuple(requests),
                                  provider_summaries=summaries)


@dataclass(slots=True)
class _Node:
    """One provider of a candidate tree, as the search needs it."""

    id: int
    uuid: str
    parent_id: int | None
    root_id: int
    parent_uuid: str | None = None
    root_uuid: str = ""
    # class -> (capacity, used, min_unit, max_unit, step_size)
    resources: dict[str, tuple[float, int, int, int, int]] = field(default_factory=dict)
    traits: frozenset[str] = frozenset()
    aggregates: frozenset[str] = frozenset()  # ids, as text


class _Trees:
    """Everything about a few trees, read in a query or two, to combine their
    providers in Python."""

    def __init__(self, nodes: dict[int, _Node]) -> None:
        self.by_root: dict[int, list[_Node]] = {}
        for node in nodes.values():
            self.by_root.setdefault(node.root_id, []).append(node)
        # Summaries repeat across a cloud of like hosts: value objects are
        # frozen, so equal ones are shared.
        self._summaries: dict[tuple[float, int], t.ResourceSummary] = {}

    @classmethod
    def load(cls, conn: sa.Connection, roots: sa.Select, params: dict, *,
             with_aggregates: bool) -> _Trees:
        """The trees of the roots ``roots`` selects (with ``params``, its
        statement built once), and their providers' aggregates when asked:
        a second statement, in a snapshot of its own, so a root gone or
        an aggregate changed in between is seen by one and not the other
        (a tree without its aggregates passes a forbidden-aggregate check
        and misses its sharing providers, for that search)."""
        trees_of, memberships = _trees_and_memberships(roots, _lateral(conn))
        trees = cls.from_rows(_tuples(conn.execute(trees_of, params)))
        if with_aggregates and trees.by_root:
            trees.add_aggregates(conn.execute(memberships, params))
        return trees

    @classmethod
    def from_rows(cls, rows: Sequence[tuple]) -> _Trees:
        """Trees from the rows of :func:`_trees_of`."""
        nodes: dict[int, _Node] = {}
        # Like hosts have like traits: equal sets are shared.
        trait_sets: dict[str, frozenset[str]] = {}
        for (pid, uuid, parent_id, root_id, rc, total, reserved, min_unit, max_unit,
             step_size, ratio, used, traits) in rows:
            node = nodes.get(pid)
            if node is None:
                node = nodes[pid] = _Node(pid, uuid, parent_id, root_id)
                if traits:
                    shared = trait_sets.get(traits)
                    if shared is None:
                        shared = trait_sets[traits] = frozenset(traits.split(","))
                    node.traits = shared
            if rc is not None:
                node.resources[rc] = (t.capacity_of(total, reserved, float(ratio)), int(used),
                                      min_unit, max_unit, step_size)
        for node in nodes.values():  # whole trees: every parent and root is here
            if node.parent_id is None:
                node.root_uuid = node.uuid
            else:
                parent = nodes.get(node.parent_id)
                node.parent_uuid = parent.uuid if parent is not None else None
                node.root_uuid = nodes[node.root_id].uuid
        return cls(nodes)

    def provider_ids(self) -> list[int]:
        return [node.id for nodes in self.by_root.values() for node in nodes]

    def add_aggregates(self, memberships: Iterable[tuple[int, int]]) -> None:
        """Set each provider's aggregates from (provider id, aggregate id)."""
        found: dict[int, set[str]] = {}
        for pid, aggregate in memberships:
            found.setdefault(pid, set()).add(str(aggregate))
        if not found:
            return
        for nodes in self.by_root.values():
            for node in nodes:
                if node.id in found:
                    node.aggregates = frozenset(found[node.id])

    @staticmethod
    def _serves(node: _Node, top: _Node, rc: str, amount: int, query: t.CandidateQuery) -> bool:
        """``node`` (of the tree under ``top``) can serve ``amount`` of ``rc``."""
        found = node.resources.get(rc)
        if found is None or not validation.fits(amount, *found):
            return False
        if query.forbidden_traits and node.traits & query.forbidden_traits:
            return False
        if not (query.member_of or query.forbidden_aggregates):
            return True
        if (node.aggregates | top.aggregates) & query.forbidden_aggregates:
            return False
        return granular.member_of_met(query.member_of, node.aggregates, top.aggregates)

    def candidates(self, root: int, query: t.CandidateQuery,
                   requested: tuple[tuple[str, int], ...]) -> Iterator[dict[str, dict[str, int]]]:
        """Allocation mappings for one tree the search statement returned,
        providers in id order (``requested``: the query's classes and
        amounts, in class order; ``query``'s aggregates named by id, see
        queries.by_aggregate_ids)."""
        tree = self.by_root[root]
        if len(tree) == 1:
            # A provider without children: the statement found it eligible
            # for every class (member_of, forbidden traits and aggregates)
            # and holding each required trait, in the same snapshot as these
            # rows. Room is checked again as the write checks it: MariaDB
            # keeps the ratio in single precision, and its product can pass
            # where the write's double precision does not.
            node = tree[0]
            for rc, amount in requested:
                if not validation.fits(amount, *node.resources[rc]):
                    return
            yield {node.uuid: dict(requested)}
            return
        top = tree[0] if tree[0].id == root else next(n for n in tree if n.id == root)
        serves = self._serves
        options = [[node for node in tree if serves(node, top, rc, amount, query)]
                   for rc, amount in requested]
        for chosen in itertools.product(*options):
            if query.required_traits:
                have = frozenset().union(*(node.traits for node in chosen))
                if not query.required_traits <= have:
                    continue
            allocations: dict[str, dict[str, int]] = {}
            for (rc, amount), node in zip(requested, chosen, strict=True):
                allocations.setdefault(node.uuid, {})[rc] = amount
            yield allocations

    def add_summaries(self, root: int, into: dict[str, t.ProviderSummary]) -> None:
        """The summaries of ``root``'s tree (:meth:`summary` of each
        provider), added to ``into``."""
        for node in self.by_root[root]:
            into[node.uuid] = self.summary(node)

    def summary(self, node: _Node) -> t.ProviderSummary:
        """The summary of one provider: every class, capacity and usage."""
        shared = self._summaries
        resources = {}
        for rc, held in node.resources.items():
            key = held[:2]  # capacity, used
            summary = shared.get(key)
            if summary is None:
                summary = shared[key] = t.ResourceSummary(int(held[0]), held[1])
            resources[rc] = summary
        return t.ProviderSummary(node.uuid, node.root_uuid, node.parent_uuid, resources,
                                 node.traits)
