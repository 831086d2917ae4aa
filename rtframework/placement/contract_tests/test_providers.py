"""Contract: creating, finding, changing and deleting providers."""

from __future__ import annotations

import pytest

from rtframework.placement import errors
from rtframework.placement import types as t
from rtframework.placement.contract_tests import new_uuid, unique

pytestmark = pytest.mark.placement


def test_create_root_starts_at_generation_zero_and_is_its_own_root(backend):
    name, uuid = unique(), new_uuid()
    rp = backend.create_provider(name, uuid=uuid)
    assert rp == t.ResourceProvider(uuid=uuid, name=name, generation=0, parent_uuid=None,
                                    root_uuid=uuid)
    assert backend.get_provider(uuid) == rp


def test_child_gets_the_root_of_its_parent(backend):
    root = backend.create_provider(unique())
    child = backend.create_provider(unique(), parent_uuid=root.uuid)
    grandchild = backend.create_provider(unique(), parent_uuid=child.uuid)
    assert (grandchild.parent_uuid, grandchild.root_uuid) == (child.uuid, root.uuid)


def test_create_with_unknown_parent_is_refused(backend):
    with pytest.raises(errors.ProviderNotFound):
        backend.create_provider(unique(), parent_uuid=new_uuid())


def test_duplicate_name_and_uuid_are_refused(backend):
    rp = backend.create_provider(unique())
    with pytest.raises(errors.DuplicateName):
        backend.create_provider(rp.name)
    with pytest.raises(errors.DuplicateUUID):
        backend.create_provider(unique(), uuid=rp.uuid)


def test_get_unknown_provider(backend):
    with pytest.raises(errors.ProviderNotFound):
        backend.get_provider(new_uuid())


def test_list_filters_by_uuid_name_and_tree(backend):
    root = backend.create_provider(unique())
    child = backend.create_provider(unique(), parent_uuid=root.uuid)
    other = backend.create_provider(unique())
    assert backend.list_providers(t.ProviderQuery(uuid=child.uuid)) == [child]
    assert backend.list_providers(t.ProviderQuery(name=other.name)) == [other]
    tree = backend.list_providers(t.ProviderQuery(in_tree=child.uuid))
    assert sorted(p.uuid for p in tree) == sorted([root.uuid, child.uuid])
    assert backend.list_providers(t.ProviderQuery(in_tree=new_uuid())) == []
    everything = {p.uuid for p in backend.list_providers()}
    assert {root.uuid, child.uuid, other.uuid} <= everything


def test_list_filters_by_traits(backend, make_provider):
    trait = "CUSTOM_" + unique("T").upper().replace("-", "_")
    with_trait = make_provider(traits=[trait, "HW_CPU_X86_AVX2"])
    without = make_provider(traits=["HW_CPU_X86_AVX2"])
    found = backend.list_providers(t.ProviderQuery(required_traits=frozenset({trait})))
    assert [p.uuid for p in found] == [with_trait.uuid]
    found = {p.uuid for p in backend.list_providers(
        t.ProviderQuery(required_traits=frozenset({"HW_CPU_X86_AVX2"}),
                        forbidden_traits=frozenset({trait})))}
    assert without.uuid in found and with_trait.uuid not in found


def test_list_filters_by_member_of(backend, make_provider):
    agg1, agg2, agg3 = new_uuid(), new_uuid(), new_uuid()
    in1 = make_provider(aggregates=[agg1])
    in12 = make_provider(aggregates=[agg1, agg2])
    in3 = make_provider(aggregates=[agg3])

    def uuids(member_of):
        return {p.uuid for p in backend.list_providers(t.ProviderQuery(member_of=member_of))}

    assert uuids((frozenset({agg1}),)) == {in1.uuid, in12.uuid}
    assert uuids((frozenset({agg2, agg3}),)) == {in12.uuid, in3.uuid}
    assert uuids((frozenset({agg1}), frozenset({agg2}))) == {in12.uuid}


def test_list_filters_by_room_for_resources(backend, make_provider, claim):
    big = make_provider({"VCPU": 8, "MEMORY_MB": 4096})
    small = make_provider({"VCPU": 2, "MEMORY_MB": 4096})
    busy = make_provider({"VCPU": 8, "MEMORY_MB": 4096})
    claim({busy.uuid: {"VCPU": 6}})
    ours = {big.uuid, small.uuid, busy.uuid}
    found = {p.uuid for p in backend.list_providers(
        t.ProviderQuery(resources={"VCPU": 4, "MEMORY_MB": 1024}))} & ours
    assert found == {big.uuid}


def test_rename_and_give_a_root_a_parent(backend):
    root = backend.create_provider(unique())
    orphan = backend.create_provider(unique())
    new_name = unique()
    renamed = backend.update_provider(orphan.uuid, name=new_name)
    assert renamed.name == new_name and renamed.parent_uuid is None
    moved = backend.update_provider(orphan.uuid, name=new_name, parent_uuid=root.uuid)
    assert (moved.parent_uuid, moved.root_uuid) == (root.uuid, root.uuid)


def test_rename_to_a_taken_name_is_refused(backend):
    a, b = backend.create_provider(unique()), backend.create_provider(unique())
    with pytest.raises(errors.DuplicateName):
        backend.update_provider(b.uuid, name=a.name)


def test_delete_takes_inventory_traits_and_aggregates_along(backend, make_provider):
    rp = make_provider({"VCPU": 4}, traits=["HW_CPU_X86_SSE"], aggregates=[new_uuid()])
    backend.delete_provider(rp.uuid)
    with pytest.raises(errors.ProviderNotFound):
        backend.get_provider(rp.uuid)
    with pytest.raises(errors.ProviderNotFound):
        backend.get_inventories(rp.uuid)
    with pytest.raises(errors.ProviderNotFound):
        backend.delete_provider(rp.uuid)


def test_delete_refused_while_allocated_or_parent(backend, make_provider, claim):
    root = make_provider({"VCPU": 4})
    child = make_provider(parent=root.uuid)
    with pytest.raises(errors.CannotDeleteParent):
        backend.delete_provider(root.uuid)
    backend.delete_provider(child.uuid)
    consumer = claim({root.uuid: {"VCPU": 1}})
    with pytest.raises(errors.ProviderInUse):
        backend.delete_provider(root.uuid)
    backend.delete_allocations(consumer)
    backend.delete_provider(root.uuid)


def test_detach_makes_a_child_the_root_of_its_subtree(backend):
    root = backend.create_provider(unique())
    child = backend.create_provider(unique(), parent_uuid=root.uuid)
    grandchild = backend.create_provider(unique(), parent_uuid=child.uuid)
    detached = backend.update_provider(child.uuid, name=child.name, detach=True)
    assert (detached.parent_uuid, detached.root_uuid) == (None, child.uuid)
    moved = backend.get_provider(grandchild.uuid)
    assert (moved.parent_uuid, moved.root_uuid) == (child.uuid, child.uuid)
    assert backend.get_provider(root.uuid).root_uuid == root.uuid
