"""The sql backend's candidates come in root provider order, and a limit
keeps the first ones: a limited search returns exactly the first
``limit`` candidates of the unlimited one, whatever the trees look like.

The clouds are random trees (a root with up to three children, inventory
on some providers, usage on some, traits anywhere, including on providers
that serve nothing: such a tree passes the search's first cut and then
gives no candidate, so the search must read further than ``limit`` trees).
"""

from __future__ import annotations

import random
import uuid

import pytest

from rtframework.placement import types as t

pytestmark = pytest.mark.placement

CLASSES = ("VCPU", "MEMORY_MB", "DISK_GB")
TRAITS = ("HW_CPU_X86_AVX2", "CUSTOM_GOLD")


def _cloud(backend, rng: random.Random, roots: int) -> list[str]:
    """Create the trees; return the root uuids in creation (id) order."""
    backend.ensure_trait("CUSTOM_GOLD")
    made = []
    for r in range(roots):
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
                backend.set_provider_traits(node.uuid, generation, traits)
    return made


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_limit_keeps_the_first_candidates_of_the_unlimited_answer(sql_backend, seed):
    rng = random.Random(seed)
    roots = _cloud(sql_backend, rng, 14)
    position = {uuid: i for i, uuid in enumerate(roots)}
    checked = 0
    for _ in range(25):
        resources = {rc: rng.randint(1, 3) for rc in rng.sample(CLASSES, rng.randint(1, 2))}
        required = frozenset(rng.sample(TRAITS, rng.randint(0, 1)))
        full = sql_backend.get_allocation_candidates(
            t.CandidateQuery(resources=resources, required_traits=required))
        order = [min(position[full.provider_summaries[p].root_uuid]
                     for p in r.allocations) for r in full.allocation_requests]
        assert order == sorted(order)
        for limit in (1, 2, 5):
            limited = sql_backend.get_allocation_candidates(
                t.CandidateQuery(resources=resources, required_traits=required, limit=limit))
            want = full.allocation_requests[:limit]
            assert [r.allocations for r in limited.allocation_requests] == \
                [r.allocations for r in want]
            named = {p for r in limited.allocation_requests for p in r.allocations}
            assert named <= set(limited.provider_summaries)
            assert all(limited.provider_summaries[p] == full.provider_summaries[p]
                       for p in limited.provider_summaries)
            checked += len(want) < len(full.allocation_requests)
    assert checked, "no query had more candidates than its limit: the cloud is too small"
