"""The sql backend's candidates come in root provider order, and a limit
keeps the first ones: a limited search returns exactly the first
``limit`` candidates of the unlimited one, whatever the trees look like,
with sharing providers among them or not.

The clouds are random trees (a root with up to three children, inventory
on some providers, usage on some, traits and aggregates anywhere,
including on providers that serve nothing: such a tree passes the
search's first cut and then gives no candidate, so the search must read
further than ``limit`` trees). The queries mix required and forbidden
traits, ``member_of`` and forbidden aggregates. This compares the sql
backend with itself; ``test_differential`` compares its answers with
Placement's.
"""

from __future__ import annotations

import random
import uuid

import pytest

from rtframework.placement import types as t
from rtframework.placement.sql import granular

CLASSES = ("VCPU", "MEMORY_MB", "DISK_GB")
TRAITS = ("HW_CPU_X86_AVX2", "CUSTOM_GOLD")
AGGREGATES = tuple(str(uuid.UUID(int=i + 1, version=4)) for i in range(2))


def _sharer(backend, name: str, aggregate: str) -> str:
    """A provider that shares DISK_GB with the trees in ``aggregate``."""
    sharer = backend.create_provider(name)
    generation = backend.set_inventories(sharer.uuid, sharer.generation, {
        "DISK_GB": t.Inventory(total=8, max_unit=8)})
    generation = backend.set_provider_traits(sharer.uuid, generation,
                                             frozenset({t.SHARING_TRAIT}))
    backend.set_provider_aggregates(sharer.uuid, generation, frozenset({aggregate}))
    return sharer.uuid


def _cloud(backend, rng: random.Random, roots: int, sharers: int = 0) -> list[str]:
    """Create the trees (and, among them, ``sharers`` sharing providers);
    return the root uuids in creation (id) order."""
    backend.ensure_trait("CUSTOM_GOLD")
    made = []
    for r in range(roots):
        if r % 5 == 3 and sharers:
            made.append(_sharer(backend, f"sharer-{r}", AGGREGATES[sharers % 2]))
            sharers -= 1
            continue
        root = backend.create_provider(f"root-{r}")
        made.append(root.uuid)
        tree = [root]
        for c in range(rng.randint(0, 3)):
            tree.append(backend.create_provider(f"root-{r}-child-{c}",
                                                parent_uuid=rng.choice(tree).uuid))
        for node in tree:
            generation = backend.get_provider(node.uuid).generation
            classes = rng.sample(CLASSES, rng.randint(0, 2))
            if classes:
                generation = backend.set_inventories(node.uuid, generation, {
                    rc: t.Inventory(total=rng.choice((2, 4, 8)), max_unit=8) for rc in classes})
                used = {rc: rng.randint(1, 2) for rc in classes if rng.random() < 0.4}
                if used:
                    backend.put_allocations(str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                                            {node.uuid: used}, project_id="p", user_id="u",
                                            consumer_generation=None)
                    generation = backend.get_provider(node.uuid).generation
            traits = frozenset(x for x in TRAITS if rng.random() < 0.3)
            if traits:
                generation = backend.set_provider_traits(node.uuid, generation, traits)
            aggregates = frozenset(a for a in AGGREGATES if rng.random() < 0.3)
            if aggregates:
                backend.set_provider_aggregates(node.uuid, generation, aggregates)
    return made


def _shape(rng: random.Random) -> dict:
    traits = rng.sample(TRAITS, rng.randint(0, 2))
    required = frozenset(traits[:rng.randint(0, len(traits))])
    aggregates = rng.sample(AGGREGATES, rng.randint(0, 2))
    member_of: tuple[frozenset[str], ...] = ()
    banned: frozenset[str] = frozenset()
    if aggregates and rng.random() < 0.5:
        member_of = (frozenset(aggregates),)
    elif aggregates:
        banned = frozenset(aggregates[:1])
    return {"resources": {rc: rng.randint(1, 3) for rc in rng.sample(CLASSES, rng.randint(1, 2))},
            "required_traits": required, "forbidden_traits": frozenset(traits) - required,
            "member_of": member_of, "forbidden_aggregates": banned}


def _own_tree(request: t.AllocationRequest, summaries: dict[str, t.ProviderSummary],
              position: dict[str, int], shared: set[str]) -> int | None:
    """The position of the tree a candidate belongs to: the tree of the
    providers it uses that share nothing (None for a candidate of sharing
    providers alone: it comes with the first tree that links them)."""
    mine = {summaries[p].root_uuid for p in request.allocations if p not in shared}
    assert len(mine) <= 1, request
    return position[mine.pop()] if mine else None


@pytest.mark.parametrize("seed, sharers, small_batches", [
    (1, 0, False), (2, 0, False), (3, 0, False), (4, 2, False), (5, 2, False), (6, 2, True),
    (7, 1, True)])
def test_a_limit_keeps_the_first_candidates_of_the_unlimited_answer(sql_backend, seed, sharers,
                                                                     small_batches, monkeypatch):
    """With sharing providers (the search of ``granular``, which reads the
    trees in batches when there is a limit) as without. With small batches
    the first batch's floor and share, and the cap on later batches, are
    reached in a cloud of 14 trees."""
    limits = (1, 2, 5)
    sizes: list[tuple[str, int]] = []
    if small_batches:
        monkeypatch.setattr(granular, "_FIRST_TREES", 2)
        monkeypatch.setattr(granular, "_CANDIDATES_PER_TREE", 2)
        monkeypatch.setattr(granular, "_MOST_TREES", 3)
        limits = (1, 2, 3, 5, 9, 13)
        for name in ("_first_size", "_next_size"):
            real = getattr(granular, name)
            monkeypatch.setattr(granular, name, lambda *args, _real=real, _name=name:
                                sizes.append((_name, _real(*args))) or sizes[-1][1])
    rng = random.Random(seed)
    roots = _cloud(sql_backend, rng, 14, sharers)
    position = {root: i for i, root in enumerate(roots)}
    shared = {p for p in roots if t.SHARING_TRAIT in sql_backend.get_provider_traits(p).traits}
    cut = 0
    for _ in range(40):
        shape = _shape(rng)
        if rng.random() < 0.2:
            shape["in_tree"] = rng.choice(roots)
        full = sql_backend.get_allocation_candidates(t.CandidateQuery(**shape))
        order = [_own_tree(r, full.provider_summaries, position, shared)
                 for r in full.allocation_requests]
        order = [at for at in order if at is not None]
        assert order == sorted(order)
        for limit in limits:
            limited = sql_backend.get_allocation_candidates(t.CandidateQuery(limit=limit, **shape))
            want = full.allocation_requests[:limit]
            assert [r.allocations for r in limited.allocation_requests] == \
                [r.allocations for r in want]
            # Summaries: every provider of each candidate's own tree, and the
            # sharing providers the candidates use.
            named = {p for r in limited.allocation_requests for p in r.allocations}
            trees = {roots[at] for r in limited.allocation_requests
                     if (at := _own_tree(r, full.provider_summaries, position, shared))
                     is not None}
            assert set(limited.provider_summaries) == named | {
                p.uuid for root in trees
                for p in sql_backend.list_providers(t.ProviderQuery(in_tree=root))}
            assert all(limited.provider_summaries[p] == full.provider_summaries[p]
                       for p in limited.provider_summaries)
            cut += len(want) < len(full.allocation_requests)
    assert cut, "no query had more candidates than its limit: the cloud is too small"
    if small_batches:
        # The floor (2 trees at limit 3), the share (4 at 9, 6 at 13), and
        # later batches at the cap (3) were all read.
        assert {("_first_size", 2), ("_first_size", 4), ("_first_size", 6),
                ("_next_size", 3)} <= set(sizes), sizes
