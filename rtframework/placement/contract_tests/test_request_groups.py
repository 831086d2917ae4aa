"""Contract: numbered request groups, group_policy, same_subtree,
root_required and sharing providers in allocation candidates.

Each search is narrowed to the test's own providers (in_tree, or a fresh
aggregate), so it also holds on a shared Placement.
"""

from __future__ import annotations

import pytest

from rtframework.placement import errors
from rtframework.placement import types as t
from rtframework.placement.contract_tests import new_uuid, unique

pytestmark = pytest.mark.placement

SHARES = "MISC_SHARES_VIA_AGGREGATE"
G = t.RequestGroup


def custom_trait(backend) -> str:
    name = "CUSTOM_" + unique("T").upper().replace("-", "_")
    backend.ensure_trait(name)
    return name


def found(backend, **kwargs) -> set[frozenset]:
    """The distinct allocations of the candidates, comparable as a set."""
    got = backend.get_allocation_candidates(t.CandidateQuery(**kwargs))
    return {frozenset((p, frozenset(r.items())) for p, r in req.allocations.items())
            for req in got.allocation_requests}


def within(root, groups: dict[str, t.RequestGroup]) -> dict[str, t.RequestGroup]:
    """The groups narrowed to ``root``'s tree (a request without unnumbered
    resources names the tree on each group)."""
    return {s: t.RequestGroup(resources=g.resources, required_traits=g.required_traits,
                              forbidden_traits=g.forbidden_traits, in_tree=root.uuid)
            for s, g in groups.items()}


def alloc(*pairs) -> frozenset:
    """alloc((provider, {class: n}), ...) as ``found`` returns it."""
    return frozenset((p.uuid, frozenset(r.items())) for p, r in pairs)


@pytest.fixture
def gpu_host(make_provider):
    """A root with VCPU and two identical one-VGPU children."""
    root = make_provider({"VCPU": 8, "MEMORY_MB": 4096})
    gpus = [make_provider({"VGPU": 2}, parent=root.uuid) for _ in range(2)]
    return root, gpus


def test_a_numbered_group_lands_on_either_identical_child(backend, gpu_host):
    root, (g0, g1) = gpu_host
    got = backend.get_allocation_candidates(t.CandidateQuery(
        resources={"VCPU": 1}, groups={"1": G(resources={"VGPU": 1})}, in_tree=root.uuid))
    by_gpu = {req.mappings["1"]: dict(req.allocations) for req in got.allocation_requests}
    assert by_gpu == {
        (g0.uuid,): {root.uuid: {"VCPU": 1}, g0.uuid: {"VGPU": 1}},
        (g1.uuid,): {root.uuid: {"VCPU": 1}, g1.uuid: {"VGPU": 1}},
    }
    assert all(req.mappings[""] == (root.uuid,) for req in got.allocation_requests)


def test_a_numbered_group_is_never_split(backend, make_provider):
    root = make_provider({"VCPU": 8})
    vgpu = make_provider({"VGPU": 2}, parent=root.uuid)
    vf = make_provider({"SRIOV_NET_VF": 2}, parent=root.uuid)
    both = {"VGPU": 1, "SRIOV_NET_VF": 1}
    assert found(backend, groups=within(root, {"1": G(resources=both)})) == set()
    # The unnumbered group may spread the same classes over the tree.
    assert found(backend, resources=both, in_tree=root.uuid) == {
        alloc((vgpu, {"VGPU": 1}), (vf, {"SRIOV_NET_VF": 1}))}


def test_group_policy_isolate_and_none(backend, gpu_host):
    root, (g0, g1) = gpu_host
    two = {"1": G(resources={"VGPU": 1}), "2": G(resources={"VGPU": 1})}
    two = within(root, two)
    assert found(backend, groups=two, group_policy="isolate") == {
        alloc((g0, {"VGPU": 1}), (g1, {"VGPU": 1}))}
    assert found(backend, groups=two, group_policy="none") == {
        alloc((g0, {"VGPU": 1}), (g1, {"VGPU": 1})),
        alloc((g0, {"VGPU": 2})), alloc((g1, {"VGPU": 2}))}


def test_groups_on_one_provider_must_fit_together(backend, make_provider, claim):
    root = make_provider({"VCPU": 8})
    gpu = make_provider({"VGPU": 2}, parent=root.uuid)
    claim({gpu.uuid: {"VGPU": 1}})
    two = within(root, {"1": G(resources={"VGPU": 1}), "2": G(resources={"VGPU": 1})})
    assert found(backend, groups=two, group_policy="none") == set()


def test_more_than_one_numbered_group_needs_a_group_policy(backend, gpu_host):
    root, _ = gpu_host
    two = within(root, {"1": G(resources={"VGPU": 1}), "2": G(resources={"VGPU": 1})})
    with pytest.raises(errors.InvalidRequest, match="group_policy"):
        backend.get_allocation_candidates(t.CandidateQuery(groups=two))


def test_same_subtree_keeps_the_cpu_and_the_gpu_on_one_numa_node(backend, make_provider):
    root = make_provider({"MEMORY_MB": 4096})
    numa = [make_provider({"PCPU": 4}, parent=root.uuid) for _ in range(2)]
    gpus = [make_provider({"VGPU": 1}, parent=n.uuid) for n in numa]
    groups = within(root, {"cpu": G(resources={"PCPU": 2}), "gpu": G(resources={"VGPU": 1})})
    spread = found(backend, groups=groups, group_policy="none")
    assert len(spread) == 4
    assert found(backend, groups=groups, group_policy="none",
                 same_subtree=(frozenset({"cpu", "gpu"}),)) == {
        alloc((numa[i], {"PCPU": 2}), (gpus[i], {"VGPU": 1})) for i in (0, 1)}


def test_a_resourceless_group_picks_the_subtree(backend, make_provider):
    trait = custom_trait(backend)
    root = make_provider({"MEMORY_MB": 4096})
    numa0 = make_provider({"PCPU": 4}, parent=root.uuid, traits=[trait])
    numa1 = make_provider({"PCPU": 4}, parent=root.uuid)
    gpu0 = make_provider({"VGPU": 1}, parent=numa0.uuid)
    make_provider({"VGPU": 1}, parent=numa1.uuid)
    groups = within(root, {"gpu": G(resources={"VGPU": 1}),
                           "numa": G(required_traits=frozenset({trait}))})
    got = backend.get_allocation_candidates(t.CandidateQuery(
        groups=groups, group_policy="none",
        same_subtree=(frozenset({"gpu", "numa"}),)))
    assert [dict(r.allocations) for r in got.allocation_requests] == [
        {gpu0.uuid: {"VGPU": 1}}]
    assert got.allocation_requests[0].mappings["numa"] == (numa0.uuid,)


def test_root_required_looks_at_the_root_only(backend, make_provider):
    trait = custom_trait(backend)
    agg = new_uuid()
    marked = make_provider({"VCPU": 4}, traits=[trait], aggregates=[agg])
    plain = make_provider({"VCPU": 4}, aggregates=[agg])
    child_marked = make_provider({"VGPU": 1}, parent=plain.uuid, traits=[trait])
    ask = {"resources": {"VCPU": 1}, "member_of": (frozenset({agg}),)}
    assert found(backend, **ask) == {alloc((marked, {"VCPU": 1})), alloc((plain, {"VCPU": 1}))}
    assert found(backend, **ask, root_required=frozenset({trait})) == {
        alloc((marked, {"VCPU": 1}))}
    assert found(backend, **ask, root_forbidden=frozenset({trait})) == {
        alloc((plain, {"VCPU": 1}))}
    assert child_marked.parent_uuid == plain.uuid


@pytest.fixture
def shared_disk(make_provider):
    """A compute node without disk and a storage pool sharing DISK_GB with
    it through a fresh aggregate."""
    agg = new_uuid()
    compute = make_provider({"VCPU": 8, "MEMORY_MB": 4096}, aggregates=[agg])
    pool = make_provider({"DISK_GB": 100}, traits=[SHARES], aggregates=[agg])
    return agg, compute, pool


def test_a_sharing_provider_serves_the_trees_of_its_aggregate(backend, shared_disk, claim):
    agg, compute, pool = shared_disk
    want = {"VCPU": 1, "DISK_GB": 10}
    got = backend.get_allocation_candidates(t.CandidateQuery(
        resources=want, member_of=(frozenset({agg}),)))
    assert [dict(r.allocations) for r in got.allocation_requests] == [
        {compute.uuid: {"VCPU": 1}, pool.uuid: {"DISK_GB": 10}}]
    assert SHARES in got.provider_summaries[pool.uuid].traits
    assert got.provider_summaries[pool.uuid].resources["DISK_GB"].capacity == 100
    claim({compute.uuid: {"VCPU": 1}, pool.uuid: {"DISK_GB": 95}})
    assert backend.get_provider_usages(pool.uuid)["DISK_GB"] == 95
    assert found(backend, resources=want, member_of=(frozenset({agg}),)) == set()


def test_a_numbered_group_may_come_from_a_sharing_provider(backend, shared_disk):
    agg, compute, pool = shared_disk
    assert found(backend, resources={"VCPU": 1}, groups={"disk": G(resources={"DISK_GB": 5})},
                 member_of=(frozenset({agg}),)) == {
        alloc((compute, {"VCPU": 1}), (pool, {"DISK_GB": 5}))}


def test_a_sharing_provider_outside_the_aggregate_is_not_used(backend, make_provider):
    compute = make_provider({"VCPU": 8}, aggregates=[new_uuid()])
    make_provider({"DISK_GB": 100}, traits=[SHARES], aggregates=[new_uuid()])
    assert found(backend, resources={"VCPU": 1, "DISK_GB": 1}, in_tree=compute.uuid) == set()


def test_disk_on_the_node_and_in_the_pool_are_both_candidates(backend, make_provider):
    agg = new_uuid()
    compute = make_provider({"VCPU": 8, "DISK_GB": 50}, aggregates=[agg])
    pool = make_provider({"DISK_GB": 100}, traits=[SHARES], aggregates=[agg])
    got = found(backend, resources={"VCPU": 1, "DISK_GB": 10}, member_of=(frozenset({agg}),))
    assert got == {alloc((compute, {"VCPU": 1, "DISK_GB": 10})),
                   alloc((compute, {"VCPU": 1}), (pool, {"DISK_GB": 10}))}


def test_required_traits_are_on_the_providers_the_unnumbered_group_uses(backend,
                                                                         make_provider):
    # A trait on one NUMA child admits the candidates that take VCPU from
    # it; one on the sharing pool admits every candidate the pool serves.
    agg, on_child, on_pool = new_uuid(), custom_trait(backend), custom_trait(backend)
    compute = make_provider({"MEMORY_MB": 4096}, aggregates=[agg])
    plain = make_provider({"VCPU": 4}, parent=compute.uuid)
    fast = make_provider({"VCPU": 4}, parent=compute.uuid, traits=[on_child])
    pool = make_provider({"DISK_GB": 100}, traits=[SHARES, on_pool], aggregates=[agg])
    want = {"VCPU": 1, "MEMORY_MB": 1, "DISK_GB": 1}

    def using(numa) -> frozenset:
        return alloc((numa, {"VCPU": 1}), (compute, {"MEMORY_MB": 1}), (pool, {"DISK_GB": 1}))

    def search(trait: str) -> set[frozenset]:
        return found(backend, resources=want, required_traits=frozenset({trait}),
                     member_of=(frozenset({agg}),))

    assert search(on_child) == {using(fast)}
    assert search(on_pool) == {using(plain), using(fast)}


def test_an_unnumbered_group_without_resources_is_refused(backend, gpu_host):
    root, _ = gpu_host
    with pytest.raises(errors.InvalidRequest, match="unnumbered group"):
        backend.get_allocation_candidates(t.CandidateQuery(
            groups={"1": G(resources={"VGPU": 1})}, in_tree=root.uuid))


def test_in_tree_leaves_out_sharing_providers_of_other_trees(backend, shared_disk):
    # As Placement does: in_tree applies to every provider of the group.
    _, compute, pool = shared_disk
    assert found(backend, resources={"VCPU": 1, "DISK_GB": 10}, in_tree=compute.uuid) == set()
    assert found(backend, resources={"DISK_GB": 10}, in_tree=pool.uuid) == {
        alloc((pool, {"DISK_GB": 10}))}


def test_the_unnumbered_group_narrows_the_sharing_providers_too(backend, make_provider):
    # Forbidden traits, forbidden aggregates and member_of apply to the
    # sharing providers that serve the group as to the tree's own, each
    # one alone (in_tree: test_in_tree_leaves_out_sharing_providers_of_other_trees).
    # The searches are narrowed by a trait on the compute node's root,
    # which says nothing of the sharing providers.
    agg, other, banned = new_uuid(), new_uuid(), new_uuid()
    anchor, trait = custom_trait(backend), custom_trait(backend)
    compute = make_provider({"VCPU": 8}, traits=[anchor], aggregates=[agg, other])
    plain = make_provider({"DISK_GB": 100}, traits=[SHARES], aggregates=[agg])
    marked = make_provider({"DISK_GB": 100}, traits=[SHARES, trait], aggregates=[agg])
    in_banned = make_provider({"DISK_GB": 100}, traits=[SHARES], aggregates=[agg, banned])
    elsewhere = make_provider({"DISK_GB": 100}, traits=[SHARES], aggregates=[other])

    def disk(**narrowed) -> set[frozenset]:
        return found(backend, resources={"VCPU": 1, "DISK_GB": 10},
                     root_required=frozenset({anchor}), **narrowed)

    def from_pools(*pools) -> set[frozenset]:
        return {alloc((compute, {"VCPU": 1}), (p, {"DISK_GB": 10})) for p in pools}

    assert disk() == from_pools(plain, marked, in_banned, elsewhere)
    assert disk(forbidden_traits=frozenset({trait})) == from_pools(plain, in_banned, elsewhere)
    assert disk(forbidden_aggregates=frozenset({banned})) == from_pools(plain, marked, elsewhere)
    assert disk(member_of=(frozenset({agg}),)) == from_pools(plain, marked, in_banned)


def test_a_tree_and_the_pool_it_shares(backend, shared_disk):
    # How a host claims on its own node: the node's classes in its tree,
    # the disk as a numbered group from a sharing provider of its aggregate.
    agg, compute, pool = shared_disk
    disk = G(resources={"DISK_GB": 10}, required_traits=frozenset({SHARES}),
             member_of=(frozenset({agg}),))
    got = backend.get_allocation_candidates(t.CandidateQuery(
        resources={"VCPU": 1}, in_tree=compute.uuid, groups={"disk": disk}))
    assert [dict(r.allocations) for r in got.allocation_requests] == [
        {compute.uuid: {"VCPU": 1}, pool.uuid: {"DISK_GB": 10}}]


def test_an_aggregate_no_provider_is_in(backend, shared_disk):
    # Asked for, it matches nothing; forbidden, it forbids nothing; beside
    # a known one in an any-of set, the known one counts.
    agg, compute, pool = shared_disk
    nobody = new_uuid()
    want = {"VCPU": 1, "DISK_GB": 10}
    both = {alloc((compute, {"VCPU": 1}), (pool, {"DISK_GB": 10}))}
    assert found(backend, resources=want, member_of=(frozenset({agg}),),
                 forbidden_aggregates=frozenset({nobody})) == both
    assert found(backend, resources=want, member_of=(frozenset({agg, nobody}),)) == both
    assert found(backend, resources=want,
                 member_of=(frozenset({agg}), frozenset({nobody}))) == set()

    def disk(**narrowed) -> set[frozenset]:
        return found(backend, resources={"VCPU": 1}, in_tree=compute.uuid,
                     groups={"disk": G(resources={"DISK_GB": 10}, **narrowed)})

    assert disk(member_of=(frozenset({nobody}),)) == set()
    assert disk(member_of=(frozenset({agg}),), forbidden_aggregates=frozenset({nobody})) == both


def test_what_a_group_without_resources_names(backend, make_provider):
    # A numbered group without resources (in same_subtree) names a provider
    # by its required traits or member_of, as Placement does; forbidden
    # traits or in_tree alone name none, so nothing is a candidate.
    agg = new_uuid()
    root = make_provider({"VCPU": 4})
    numa = make_provider({"MEMORY_MB": 1024}, parent=root.uuid, aggregates=[agg])
    gpu = make_provider({"VGPU": 1}, parent=numa.uuid)

    def named_by(**group) -> set[frozenset]:
        return found(backend, resources={"VCPU": 1}, in_tree=root.uuid, group_policy="none",
                     groups={"gpu": G(resources={"VGPU": 1}, in_tree=root.uuid),
                             "numa": G(**group)},
                     same_subtree=(frozenset({"gpu", "numa"}),))

    with_gpu = {alloc((root, {"VCPU": 1}), (gpu, {"VGPU": 1}))}
    assert named_by(member_of=(frozenset({agg}),)) == with_gpu
    assert named_by(member_of=(frozenset({new_uuid()}),)) == set()
    assert named_by(forbidden_traits=frozenset({"HW_CPU_X86_AVX2"})) == set()
    assert named_by(in_tree=root.uuid) == set()


@pytest.mark.parametrize("path", ["plain", "granular"])
def test_a_provider_or_its_root_alone_meets_every_member_of_set(backend, make_provider, path):
    # The root is in x, its VCPU child in y: each set alone is met (the
    # root's aggregate spans the tree), both together by neither alone.
    x, y, anchor = new_uuid(), new_uuid(), custom_trait(backend)
    root = make_provider({"MEMORY_MB": 1024}, traits=[anchor], aggregates=[x])
    child = make_provider({"VCPU": 4}, parent=root.uuid, aggregates=[y])
    # root_required sends the search down the granular path.
    narrowed = {"root_required": frozenset({anchor})} if path == "granular" else {}

    def vcpu(*sets) -> set[frozenset]:
        return found(backend, resources={"VCPU": 1}, in_tree=root.uuid,
                     member_of=tuple(frozenset({s}) for s in sets), **narrowed)

    assert vcpu(x) == vcpu(y) == {alloc((child, {"VCPU": 1}))}
    assert vcpu(x, y) == set()
    assert found(backend, resources={"VCPU": 1}, in_tree=root.uuid,
                 member_of=(frozenset({x}), frozenset({x, y})), **narrowed) == {
        alloc((child, {"VCPU": 1}))}


@pytest.fixture
def linked_pools(backend, make_provider):
    """Two compute trees that give nothing but link two pools, each in
    one of two aggregates the trees are both in."""
    disk_agg, ip_agg, anchor = new_uuid(), new_uuid(), custom_trait(backend)
    trees = [make_provider({"VCPU": 8}, traits=[anchor], aggregates=[disk_agg, ip_agg])
             for _ in range(2)]
    disk = make_provider({"DISK_GB": 100}, traits=[SHARES], aggregates=[disk_agg])
    ips = make_provider({"IPV4_ADDRESS": 10}, traits=[SHARES], aggregates=[ip_agg])
    return anchor, (disk_agg, ip_agg), trees, disk, ips


def test_sharing_providers_alone_make_a_candidate(backend, linked_pools):
    # Neither pool is in the other's aggregate: only the trees link them.
    # The candidate is listed once, however many trees link it, and its
    # summaries name the pools only.
    anchor, aggregates, trees, disk, ips = linked_pools
    want = {"DISK_GB": 1, "IPV4_ADDRESS": 1}
    pools = {alloc((disk, {"DISK_GB": 1}), (ips, {"IPV4_ADDRESS": 1}))}
    assert found(backend, resources=want, member_of=(frozenset(aggregates),)) == pools
    got = backend.get_allocation_candidates(t.CandidateQuery(
        resources=want, root_required=frozenset({anchor})))
    assert len(got.allocation_requests) == 1
    assert set(got.provider_summaries) == {disk.uuid, ips.uuid}
    assert found(backend, resources={"VCPU": 1, **want}, root_required=frozenset({anchor})) == {
        alloc((tree, {"VCPU": 1}), (disk, {"DISK_GB": 1}), (ips, {"IPV4_ADDRESS": 1}))
        for tree in trees}


def test_a_numbered_group_of_a_pool_alone_is_a_candidate(backend, linked_pools):
    # root_required looks at the trees that link the pool; two link it,
    # one candidate.
    anchor, _, _, disk, _ = linked_pools
    got = backend.get_allocation_candidates(t.CandidateQuery(
        groups={"1": G(resources={"DISK_GB": 1})}, root_required=frozenset({anchor})))
    assert [dict(r.allocations) for r in got.allocation_requests] == [
        {disk.uuid: {"DISK_GB": 1}}]
    assert found(backend, groups={"1": G(resources={"DISK_GB": 1})},
                 root_required=frozenset({anchor, custom_trait(backend)})) == set()
