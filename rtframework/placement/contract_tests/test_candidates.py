"""Contract: allocation candidates for one unnumbered request group.

Every test narrows the search with in_tree or checks membership only, so
that it also holds on a shared Placement full of other tests' providers.
"""

from __future__ import annotations

import pytest

from rtframework.placement import errors
from rtframework.placement import types as t
from rtframework.placement.contract_tests import new_uuid, unique

pytestmark = pytest.mark.placement

FLAVOR = {"VCPU": 2, "MEMORY_MB": 512}


def custom_trait(backend) -> str:
    name = "CUSTOM_" + unique("T").upper().replace("-", "_")
    backend.ensure_trait(name)
    return name


def in_any_order(requests: list[dict]) -> list[dict]:
    """Allocation requests sorted by what they hold. A backend names a
    request's providers in an order of its own (Placement: not the uuids'),
    so ``str`` is no sort key: two equal requests can print differently."""
    return sorted(requests, key=lambda r: sorted((p, sorted(res.items())) for p, res in r.items()))


def candidates(backend, tree=None, **kwargs) -> list[dict]:
    got = backend.get_allocation_candidates(
        t.CandidateQuery(resources=kwargs.pop("resources", FLAVOR), in_tree=tree, **kwargs))
    return [dict(r.allocations) for r in got.allocation_requests]


def test_single_provider_candidate_and_summary(backend, make_provider, claim):
    rp = make_provider({"VCPU": t.Inventory(total=8, allocation_ratio=2.0), "MEMORY_MB": 1024,
                        "DISK_GB": 50}, traits=["HW_CPU_X86_AVX2"])
    claim({rp.uuid: {"VCPU": 3}})
    got = backend.get_allocation_candidates(t.CandidateQuery(resources=FLAVOR, in_tree=rp.uuid))
    assert [dict(r.allocations) for r in got.allocation_requests] == [{rp.uuid: FLAVOR}]
    summary = got.provider_summaries[rp.uuid]
    assert (summary.root_uuid, summary.parent_uuid) == (rp.uuid, None)
    assert summary.resources["VCPU"] == t.ResourceSummary(capacity=16, used=3)
    assert summary.resources["DISK_GB"] == t.ResourceSummary(capacity=50, used=0)
    assert "HW_CPU_X86_AVX2" in summary.traits


def test_full_provider_is_not_a_candidate(backend, make_provider, claim):
    rp = make_provider({"VCPU": 4, "MEMORY_MB": 1024})
    claim({rp.uuid: {"VCPU": 3}})
    assert candidates(backend, rp.uuid) == []
    assert candidates(backend, rp.uuid, resources={"VCPU": 1, "MEMORY_MB": 512}) == [
        {rp.uuid: {"VCPU": 1, "MEMORY_MB": 512}}]


def test_unit_constraints_are_respected(backend, make_provider):
    rp = make_provider({"VCPU": t.Inventory(total=16, max_unit=1), "MEMORY_MB": 1024})
    assert candidates(backend, rp.uuid) == []


def test_resources_spread_over_a_nested_tree(backend, make_provider):
    root = make_provider({"MEMORY_MB": 2048})
    numa0 = make_provider({"VCPU": 4}, parent=root.uuid)
    numa1 = make_provider({"VCPU": 4}, parent=root.uuid)
    make_provider({"VCPU": 1}, parent=root.uuid)  # too small
    got = backend.get_allocation_candidates(t.CandidateQuery(resources=FLAVOR, in_tree=root.uuid))
    requests = [dict(r.allocations) for r in got.allocation_requests]
    expected = [{root.uuid: {"MEMORY_MB": 512}, numa.uuid: {"VCPU": 2}} for numa in (numa0, numa1)]
    assert in_any_order(requests) == in_any_order(expected)
    # Summaries cover every provider of the tree.
    assert len(got.provider_summaries) == 4
    assert got.provider_summaries[numa0.uuid].parent_uuid == root.uuid


def test_each_summary_lists_the_traits_of_its_own_provider(backend, make_provider):
    """Traits do not spread over a tree in the summaries either."""
    on_root, on_child = custom_trait(backend), custom_trait(backend)
    root = make_provider({"MEMORY_MB": 2048}, traits=[on_root])
    numa0 = make_provider({"VCPU": 4}, parent=root.uuid, traits=[on_child])
    numa1 = make_provider({"VCPU": 4}, parent=root.uuid)
    got = backend.get_allocation_candidates(t.CandidateQuery(resources=FLAVOR, in_tree=root.uuid))
    assert len(got.allocation_requests) == 2
    assert {uuid: s.traits for uuid, s in got.provider_summaries.items()} == {
        root.uuid: frozenset({on_root}), numa0.uuid: frozenset({on_child}),
        numa1.uuid: frozenset()}


def test_one_class_is_not_split_between_providers(backend, make_provider):
    root = make_provider({"MEMORY_MB": 2048})
    make_provider({"VCPU": 1}, parent=root.uuid)
    make_provider({"VCPU": 1}, parent=root.uuid)
    assert candidates(backend, root.uuid) == []


def test_required_trait_must_be_on_a_serving_provider(backend, make_provider):
    trait = custom_trait(backend)
    root = make_provider({"VCPU": 8, "MEMORY_MB": 2048})
    nic_ssl = make_provider({"SRIOV_NET_VF": 8}, parent=root.uuid, traits=[trait])
    make_provider({"SRIOV_NET_VF": 8}, parent=root.uuid)
    want = {"VCPU": 1, "MEMORY_MB": 512, "SRIOV_NET_VF": 2}
    assert candidates(backend, root.uuid, resources=want, required_traits=frozenset({trait})) == [
        {root.uuid: {"VCPU": 1, "MEMORY_MB": 512}, nic_ssl.uuid: {"SRIOV_NET_VF": 2}}]
    # A trait on a provider that serves nothing in the request does not count.
    assert candidates(backend, root.uuid, required_traits=frozenset({trait})) == []


def test_forbidden_trait_excludes_serving_providers(backend, make_provider):
    trait = custom_trait(backend)
    root = make_provider({"VCPU": 8, "MEMORY_MB": 2048})
    make_provider({"SRIOV_NET_VF": 8}, parent=root.uuid, traits=[trait])
    plain = make_provider({"SRIOV_NET_VF": 8}, parent=root.uuid)
    want = {"VCPU": 1, "MEMORY_MB": 512, "SRIOV_NET_VF": 2}
    assert candidates(backend, root.uuid, resources=want,
                      forbidden_traits=frozenset({trait})) == [
        {root.uuid: {"VCPU": 1, "MEMORY_MB": 512}, plain.uuid: {"SRIOV_NET_VF": 2}}]
    # A forbidden trait on a provider that serves nothing does not matter.
    assert candidates(backend, root.uuid, forbidden_traits=frozenset({trait})) == [
        {root.uuid: FLAVOR}]


def test_forbidden_trait_on_a_provider_without_children(backend, make_provider):
    trait = custom_trait(backend)
    marked = make_provider({"VCPU": 8, "MEMORY_MB": 2048}, traits=[trait])
    plain = make_provider({"VCPU": 8, "MEMORY_MB": 2048})
    forbidden = frozenset({trait})
    assert candidates(backend, marked.uuid, forbidden_traits=forbidden) == []
    assert candidates(backend, plain.uuid, forbidden_traits=forbidden) == [{plain.uuid: FLAVOR}]
    # Without in_tree, as the scheduler asks: the plain one only.
    anywhere = {p for found in candidates(backend, forbidden_traits=forbidden) for p in found}
    assert plain.uuid in anywhere
    assert marked.uuid not in anywhere


def test_member_of_on_the_root_spans_the_tree(backend, make_provider):
    agg_root, agg_child = new_uuid(), new_uuid()
    root = make_provider({"MEMORY_MB": 2048}, aggregates=[agg_root])
    numa = make_provider({"VCPU": 4}, parent=root.uuid, aggregates=[agg_child])
    expected = [{root.uuid: {"MEMORY_MB": 512}, numa.uuid: {"VCPU": 2}}]
    assert candidates(backend, root.uuid, member_of=(frozenset({agg_root}),)) == expected
    # An aggregate on a child covers that child only: the root serving
    # MEMORY_MB is not in it.
    assert candidates(backend, root.uuid, member_of=(frozenset({agg_child}),)) == []
    assert candidates(backend, root.uuid,
                      member_of=(frozenset({agg_child, agg_root}),)) == expected
    assert candidates(backend, root.uuid, member_of=(frozenset({new_uuid()}),)) == []


def test_member_of_across_trees(backend, make_provider):
    agg = new_uuid()
    inside = make_provider({"VCPU": 4, "MEMORY_MB": 1024}, aggregates=[agg])
    outside = make_provider({"VCPU": 4, "MEMORY_MB": 1024})
    found = candidates(backend, member_of=(frozenset({agg}),))
    assert found == [{inside.uuid: FLAVOR}]
    assert {outside.uuid: FLAVOR} not in found


def test_limit_caps_the_number_of_requests(backend, make_provider):
    agg = new_uuid()
    for _ in range(4):
        make_provider({"VCPU": 4, "MEMORY_MB": 1024}, aggregates=[agg])
    member_of = (frozenset({agg}),)
    everything = candidates(backend, member_of=member_of)
    assert len(everything) == 4
    limited = backend.get_allocation_candidates(
        t.CandidateQuery(resources=FLAVOR, member_of=member_of, limit=2))
    assert len(limited.allocation_requests) == 2
    for request in limited.allocation_requests:
        assert dict(request.allocations) in everything
        for provider in request.allocations:
            assert provider in limited.provider_summaries


def test_candidates_can_be_claimed(backend, make_provider):
    root = make_provider({"MEMORY_MB": 2048})
    make_provider({"VCPU": 4}, parent=root.uuid)
    request = backend.get_allocation_candidates(
        t.CandidateQuery(resources=FLAVOR, in_tree=root.uuid)).allocation_requests[0]
    consumer = new_uuid()
    backend.put_allocations(consumer, request.allocations, project_id="p", user_id="u",
                            consumer_generation=None)
    assert backend.get_consumer_allocations(consumer).allocations == dict(request.allocations)


def test_unknown_tree_has_no_candidates(backend):
    assert candidates(backend, new_uuid()) == []


def test_unknown_trait_or_class_in_request(backend):
    with pytest.raises(errors.TraitNotFound):
        candidates(backend, required_traits=frozenset({"CUSTOM_" + unique("X").upper()
                                                       .replace("-", "_")}))
    with pytest.raises((errors.ResourceClassNotFound, errors.InvalidRequest)):
        candidates(backend, resources={"CUSTOM_" + unique("X").upper().replace("-", "_"): 1})


@pytest.mark.parametrize("required", [False, True])
def test_a_cloud_wide_search_agrees_with_per_tree_and_limited_ones(
        backend, make_provider, claim, required):
    """Searching the whole cloud, one tree at a time and with a limit finds
    the same candidates and summaries (usage, nested trees, traits)."""
    trait = custom_trait(backend)
    agg = new_uuid()
    nested = make_provider({"MEMORY_MB": 2048}, aggregates=[agg])
    numa0 = make_provider({"VCPU": 4}, parent=nested.uuid, traits=[trait])
    numa1 = make_provider({"VCPU": 4}, parent=nested.uuid)
    used = make_provider({"VCPU": 8, "MEMORY_MB": 1024}, aggregates=[agg])
    claim({used.uuid: {"VCPU": 5, "MEMORY_MB": 256}})
    full = make_provider({"VCPU": 8, "MEMORY_MB": 1024}, aggregates=[agg], traits=[trait])
    claim({full.uuid: {"VCPU": 7}})
    roomy = make_provider({"VCPU": 8, "MEMORY_MB": 4096}, aggregates=[agg], traits=[trait])
    roots = [p.uuid for p in backend.list_providers(t.ProviderQuery(member_of=(frozenset({agg}),)))]
    query = {"member_of": (frozenset({agg}),),
             "required_traits": frozenset({trait}) if required else frozenset()}

    def search(**extra):
        got = backend.get_allocation_candidates(t.CandidateQuery(resources=FLAVOR, **query,
                                                                 **extra))
        return [dict(r.allocations) for r in got.allocation_requests], got.provider_summaries

    everything, summaries = search()
    per_tree, tree_summaries = [], {}
    for root in roots:
        found, found_summaries = search(in_tree=root)
        per_tree += found
        tree_summaries.update(found_summaries)
    limited, limited_summaries = search(limit=100)
    # (Placement orders candidates its own way.)
    assert in_any_order(everything) == in_any_order(per_tree) == in_any_order(limited)
    # What the three searches agree on is the right answer, written out.
    memory = {"MEMORY_MB": FLAVOR["MEMORY_MB"]}
    vcpu = {"VCPU": FLAVOR["VCPU"]}
    expected = [{nested.uuid: memory, numa0.uuid: vcpu}, {roomy.uuid: FLAVOR}]
    if not required:
        expected += [{nested.uuid: memory, numa1.uuid: vcpu}, {used.uuid: FLAVOR}]
    assert in_any_order(everything) == in_any_order(expected)
    assert summaries == tree_summaries == limited_summaries
    # The nested tree (its trait on one NUMA node), the used and the roomy
    # host; the full one is never a candidate.
    assert len(everything) == (2 if required else 4)
    assert all(full.uuid not in request for request in everything)
    assert summaries[numa0.uuid].parent_uuid == nested.uuid
    if not required:
        assert summaries[used.uuid].resources["VCPU"] == t.ResourceSummary(capacity=8, used=5)
