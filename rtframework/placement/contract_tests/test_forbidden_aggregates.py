"""Contract: forbidden aggregates in allocation candidates (``member_of=!agg``
and ``member_of=!in:a,b``, Placement 1.32).

For the unnumbered group no provider serving it may be in a forbidden
aggregate, nor may the root of its tree (an aggregate on the root spans
the tree, for better and for worse); a numbered group looks at its own
provider's aggregates only. Each search is narrowed to the test's own
providers (in_tree, or a fresh aggregate), so it also holds on a shared
Placement.
"""

from __future__ import annotations

import pytest

from rtframework.placement import errors
from rtframework.placement import types as t
from rtframework.placement.contract_tests import new_uuid

pytestmark = pytest.mark.placement

SHARES = "MISC_SHARES_VIA_AGGREGATE"
G = t.RequestGroup


def ordered(requests) -> list[dict]:
    """Allocation requests in one order (a backend has its own)."""
    return sorted((dict(a) for a in requests),
                  key=lambda a: sorted((p, sorted(r.items())) for p, r in a.items()))


def found(backend, **kwargs) -> list[dict]:
    got = backend.get_allocation_candidates(t.CandidateQuery(**kwargs))
    return ordered(r.allocations for r in got.allocation_requests)


def test_a_forbidden_aggregate_on_the_root_rules_out_the_whole_tree(backend, make_provider):
    mine, banned = new_uuid(), new_uuid()
    good = make_provider({"VCPU": 4}, aggregates=[mine])
    bad = make_provider({"VCPU": 4}, aggregates=[mine, banned])
    bad_child = make_provider({"MEMORY_MB": 1024}, parent=bad.uuid)
    assert found(backend, resources={"VCPU": 1}, member_of=(frozenset({mine}),),
                 forbidden_aggregates=frozenset({banned})) == [{good.uuid: {"VCPU": 1}}]
    # The child is not in the aggregate, its root is: it is out as well.
    assert found(backend, resources={"MEMORY_MB": 1}, in_tree=bad.uuid,
                 forbidden_aggregates=frozenset({banned})) == []
    assert found(backend, resources={"MEMORY_MB": 1}, in_tree=bad.uuid) == [
        {bad_child.uuid: {"MEMORY_MB": 1}}]


def test_a_forbidden_aggregate_on_a_child_rules_out_that_child(backend, make_provider):
    banned = new_uuid()
    root = make_provider({"VCPU": 8})
    gpu0 = make_provider({"VGPU": 2}, parent=root.uuid, aggregates=[banned])
    gpu1 = make_provider({"VGPU": 2}, parent=root.uuid)
    want = {"VCPU": 1, "VGPU": 1}
    assert len(found(backend, resources=want, in_tree=root.uuid)) == 2
    assert found(backend, resources=want, in_tree=root.uuid,
                 forbidden_aggregates=frozenset({banned})) == [
        {root.uuid: {"VCPU": 1}, gpu1.uuid: {"VGPU": 1}}]
    assert gpu0.uuid  # the other child, left out


def test_none_of_several_forbidden_aggregates(backend, make_provider):
    """``!in:a,b`` forbids each of them, unlike ``in:a,b`` (any one of them)."""
    mine, a, b = new_uuid(), new_uuid(), new_uuid()
    in_a = make_provider({"VCPU": 4}, aggregates=[mine, a])
    in_b = make_provider({"VCPU": 4}, aggregates=[mine, b])
    neither = make_provider({"VCPU": 4}, aggregates=[mine])
    one = {"VCPU": 1}
    assert found(backend, resources=one, member_of=(frozenset({mine}),),
                 forbidden_aggregates=frozenset({a, b})) == [{neither.uuid: one}]
    assert found(backend, resources=one, member_of=(frozenset({mine}), frozenset({a, b}))
                 ) == ordered([{in_a.uuid: one}, {in_b.uuid: one}])
    # Required and forbidden together: in a, not in b.
    assert found(backend, resources=one, member_of=(frozenset({a}),),
                 forbidden_aggregates=frozenset({b})) == [{in_a.uuid: one}]
    # An aggregate nobody is in forbids nothing.
    assert found(backend, resources=one, member_of=(frozenset({mine}),),
                 forbidden_aggregates=frozenset({new_uuid()})) == ordered(
        {p.uuid: one} for p in (in_a, in_b, neither))


def test_a_numbered_group_looks_at_its_own_provider_only(backend, make_provider):
    banned = new_uuid()
    root = make_provider({"VCPU": 8}, aggregates=[banned])
    gpu = make_provider({"VGPU": 2}, parent=root.uuid)
    # The root is in the aggregate, the GPU child is not: a numbered group
    # on the child is fine, the unnumbered group on the root is not.
    assert found(backend, groups={"1": G(resources={"VGPU": 1}, in_tree=root.uuid,
                                         forbidden_aggregates=frozenset({banned}))}) == [
        {gpu.uuid: {"VGPU": 1}}]
    assert found(backend, groups={"1": G(resources={"VCPU": 1}, in_tree=root.uuid,
                                         forbidden_aggregates=frozenset({banned}))}) == []
    assert found(backend, resources={"VGPU": 1}, in_tree=root.uuid,
                 forbidden_aggregates=frozenset({banned})) == []


def test_a_storage_pool_in_a_forbidden_aggregate_is_not_used(backend, make_provider):
    shared, banned = new_uuid(), new_uuid()
    compute = make_provider({"VCPU": 8}, aggregates=[shared])
    pool = make_provider({"DISK_GB": 100}, traits=[SHARES], aggregates=[shared])
    other = make_provider({"DISK_GB": 100}, traits=[SHARES], aggregates=[shared, banned])
    want = {"VCPU": 1, "DISK_GB": 10}
    everything = found(backend, resources=want, member_of=(frozenset({shared}),))
    assert {tuple(sorted(a)) for a in everything} == {
        tuple(sorted([compute.uuid, pool.uuid])), tuple(sorted([compute.uuid, other.uuid]))}
    assert found(backend, resources=want, member_of=(frozenset({shared}),),
                 forbidden_aggregates=frozenset({banned})) == [
        {compute.uuid: {"VCPU": 1}, pool.uuid: {"DISK_GB": 10}}]
    # Forbidding the aggregate the tree shares its pools through rules out
    # the tree itself.
    assert found(backend, resources=want, member_of=(frozenset({shared}),),
                 forbidden_aggregates=frozenset({shared})) == []


@pytest.mark.parametrize("bad", [
    "not-a-uuid",  # a string: not a set of uuids
    frozenset({"not-a-uuid"}),
    frozenset({None}),
    42,
])
def test_a_malformed_forbidden_aggregate_is_refused(backend, make_provider, bad):
    root = make_provider({"VCPU": 4})
    with pytest.raises(errors.InvalidRequest):
        backend.get_allocation_candidates(t.CandidateQuery(
            resources={"VCPU": 1}, in_tree=root.uuid, forbidden_aggregates=bad))
    with pytest.raises(errors.InvalidRequest):
        backend.get_allocation_candidates(t.CandidateQuery(
            resources={"VCPU": 1}, groups={"1": G(resources={"VCPU": 1}, in_tree=root.uuid,
                                                  forbidden_aggregates=bad)}))


def test_forbidden_aggregates_on_a_group_without_resources(backend, make_provider):
    """The unnumbered group needs resources for them; a numbered group
    without resources (named in same_subtree, Placement 1.36+) may forbid
    aggregates. Such a group names a provider by its required traits or
    member_of only (as Placement does): with neither, or with a trait no
    provider has, there is no candidate."""
    banned = new_uuid()
    root = make_provider({"VCPU": 4})
    child = make_provider({"VGPU": 1}, parent=root.uuid, aggregates=[banned])
    with pytest.raises(errors.InvalidRequest):
        backend.get_allocation_candidates(t.CandidateQuery(
            groups={"1": G(resources={"VGPU": 1}, in_tree=root.uuid)},
            forbidden_aggregates=frozenset({new_uuid()})))
    assert found(backend, resources={"VCPU": 1}, in_tree=root.uuid,
                 groups={"1": G(resources={"VGPU": 1}, in_tree=root.uuid)}) == [
        {root.uuid: {"VCPU": 1}, child.uuid: {"VGPU": 1}}]
    for traits, want in ((frozenset(), []), (frozenset({"HW_CPU_X86_AVX2"}), [])):
        assert found(backend, resources={"VCPU": 1}, in_tree=root.uuid, group_policy="none",
                     groups={"1": G(resources={"VGPU": 1}, in_tree=root.uuid),
                             "2": G(required_traits=traits,
                                    forbidden_aggregates=frozenset({banned}))},
                     same_subtree=(frozenset({"1", "2"}),)) == want


def test_a_numbered_groups_member_of_is_its_own_providers(backend, make_provider):
    """The root's aggregate spans the tree for the unnumbered group only."""
    agg = new_uuid()
    root = make_provider({"VCPU": 8}, aggregates=[agg])
    gpu = make_provider({"VGPU": 2}, parent=root.uuid)
    on_root = (frozenset({agg}),)
    assert found(backend, groups={"1": G(resources={"VGPU": 1}, in_tree=root.uuid,
                                         member_of=on_root)}) == []
    assert found(backend, resources={"VGPU": 1}, in_tree=root.uuid, member_of=on_root) == [
        {gpu.uuid: {"VGPU": 1}}]
