"""Contract: inventories, their validation and provider generations."""

from __future__ import annotations

import pytest

from rtframework.placement import errors
from rtframework.placement import types as t
from rtframework.placement.contract_tests import new_uuid, unique

pytestmark = pytest.mark.placement


def test_set_inventories_replaces_the_whole_inventory(backend):
    rp = backend.create_provider(unique())
    vcpu = t.Inventory(total=16, reserved=2, min_unit=1, max_unit=8, step_size=1,
                       allocation_ratio=4.0)
    gen = backend.set_inventories(rp.uuid, 0, {"VCPU": vcpu, "MEMORY_MB": t.Inventory(2048)})
    assert gen == 1
    gen = backend.set_inventories(rp.uuid, gen, {"VCPU": vcpu, "DISK_GB": t.Inventory(100)})
    got = backend.get_inventories(rp.uuid)
    assert got.generation == gen == 2
    assert dict(got.inventories) == {"VCPU": vcpu, "DISK_GB": t.Inventory(100)}


def test_set_and_delete_one_class(backend):
    rp = backend.create_provider(unique())
    gen = backend.set_inventory(rp.uuid, 0, "VCPU", t.Inventory(total=4))
    gen = backend.set_inventory(rp.uuid, gen, "MEMORY_MB", t.Inventory(total=512))
    gen = backend.set_inventory(rp.uuid, gen, "VCPU", t.Inventory(total=8))
    assert dict(backend.get_inventories(rp.uuid).inventories) == {
        "VCPU": t.Inventory(total=8), "MEMORY_MB": t.Inventory(total=512)}
    gen = backend.delete_inventory(rp.uuid, gen, "MEMORY_MB")
    got = backend.get_inventories(rp.uuid)
    assert (got.generation, set(got.inventories)) == (gen, {"VCPU"})


def test_deleting_a_class_the_provider_has_no_inventory_of_is_not_found(backend):
    rp = backend.create_provider(unique())
    gen = backend.set_inventory(rp.uuid, 0, "VCPU", t.Inventory(total=4))
    with pytest.raises(errors.NotFound, match="MEMORY_MB"):
        backend.delete_inventory(rp.uuid, gen, "MEMORY_MB")
    assert backend.get_inventories(rp.uuid) == t.ProviderInventories(
        gen, {"VCPU": t.Inventory(total=4)})


@pytest.mark.parametrize("write", ["set_inventories", "set_inventory", "delete_inventory",
                                   "set_provider_traits", "set_provider_aggregates"])
def test_stale_provider_generation_is_refused_and_changes_nothing(backend, write):
    rp = backend.create_provider(unique())
    gen = backend.set_inventories(rp.uuid, 0, {"VCPU": t.Inventory(4)})
    calls = {
        "set_inventories": lambda g: backend.set_inventories(rp.uuid, g, {}),
        "set_inventory": lambda g: backend.set_inventory(rp.uuid, g, "VCPU", t.Inventory(9)),
        "delete_inventory": lambda g: backend.delete_inventory(rp.uuid, g, "VCPU"),
        "set_provider_traits": lambda g: backend.set_provider_traits(
            rp.uuid, g, frozenset({"HW_CPU_X86_SSE"})),
        "set_provider_aggregates": lambda g: backend.set_provider_aggregates(
            rp.uuid, g, frozenset({new_uuid()})),
    }
    with pytest.raises(errors.ProviderGenerationConflict):
        calls[write](gen - 1)
    assert backend.get_inventories(rp.uuid) == t.ProviderInventories(gen, {"VCPU": t.Inventory(4)})
    assert backend.get_provider_traits(rp.uuid).traits == frozenset()
    assert backend.get_provider_aggregates(rp.uuid).aggregates == frozenset()
    assert calls[write](gen) == gen + 1


@pytest.mark.parametrize("inv", [
    t.Inventory(total=0),
    t.Inventory(total=4, reserved=5),
    t.Inventory(total=4, reserved=-1),
    t.Inventory(total=4, min_unit=0),
    t.Inventory(total=4, min_unit=3, max_unit=2),
    t.Inventory(total=4, max_unit=0),
    t.Inventory(total=4, step_size=0),
    t.Inventory(total=4, allocation_ratio=0.0),
], ids=["total0", "reserved>total", "reserved<0", "min0", "min>max", "max0", "step0", "ratio0"])
def test_impossible_inventory_is_refused(backend, inv):
    rp = backend.create_provider(unique())
    with pytest.raises(errors.InvalidInventory):
        backend.set_inventories(rp.uuid, 0, {"VCPU": inv})
    assert backend.get_inventories(rp.uuid) == t.ProviderInventories(0, {})


def test_max_unit_above_total_and_reserved_equal_total_are_accepted(backend):
    rp = backend.create_provider(unique())
    backend.set_inventories(rp.uuid, 0, {"VCPU": t.Inventory(total=4, max_unit=64),
                                         "DISK_GB": t.Inventory(total=10, reserved=10)})
    assert backend.get_inventories(rp.uuid).inventories["VCPU"].max_unit == 64


def test_unknown_and_malformed_resource_classes(backend):
    rp = backend.create_provider(unique())
    with pytest.raises(errors.ResourceClassNotFound):
        backend.set_inventories(rp.uuid, 0, {"CUSTOM_" + unique("NOPE").upper().replace("-", "_"):
                                             t.Inventory(1)})
    with pytest.raises(errors.InvalidResourceClass):
        backend.set_inventory(rp.uuid, 0, "lower_case", t.Inventory(1))


def test_custom_resource_class_in_inventory(backend):
    rc = "CUSTOM_" + unique("GPU").upper().replace("-", "_")
    backend.ensure_resource_class(rc)
    backend.ensure_resource_class(rc)  # idempotent
    rp = backend.create_provider(unique())
    backend.set_inventories(rp.uuid, 0, {rc: t.Inventory(2)})
    assert rc in backend.list_resource_classes()
    with pytest.raises(errors.ResourceClassInUse):
        backend.delete_resource_class(rc)


def test_removing_an_allocated_class_is_refused(backend, make_provider, claim):
    rp = make_provider({"VCPU": 4, "MEMORY_MB": 1024})
    claim({rp.uuid: {"VCPU": 1}})
    gen = backend.get_inventories(rp.uuid).generation
    with pytest.raises(errors.InventoryInUse):
        backend.set_inventories(rp.uuid, gen, {"MEMORY_MB": t.Inventory(1024)})
    with pytest.raises(errors.InventoryInUse):
        backend.delete_inventory(rp.uuid, gen, "VCPU")
    assert set(backend.get_inventories(rp.uuid).inventories) == {"VCPU", "MEMORY_MB"}
    assert backend.get_inventories(rp.uuid).generation == gen


def test_shrinking_below_usage_is_accepted(backend, make_provider, claim):
    rp = make_provider({"VCPU": 8})
    claim({rp.uuid: {"VCPU": 6}})
    gen = backend.get_inventories(rp.uuid).generation
    backend.set_inventory(rp.uuid, gen, "VCPU", t.Inventory(total=4))
    assert backend.get_inventories(rp.uuid).inventories["VCPU"].total == 4
    assert backend.get_provider_usages(rp.uuid) == {"VCPU": 6}


def test_inventory_of_unknown_provider(backend):
    with pytest.raises(errors.ProviderNotFound):
        backend.set_inventories(new_uuid(), 0, {"VCPU": t.Inventory(1)})
    with pytest.raises(errors.ProviderNotFound):
        backend.get_inventories(new_uuid())


def test_reshape_moves_inventory_and_allocations_together(backend, make_provider):
    root = make_provider({"VCPU": 8})
    child = backend.create_provider(unique(), parent_uuid=root.uuid)
    consumer = new_uuid()
    backend.put_allocations(consumer, {root.uuid: {"VCPU": 3}}, project_id="p", user_id="u",
                            consumer_generation=None)
    root_gen = backend.get_provider(root.uuid).generation
    backend.reshape(
        {root.uuid: t.ProviderInventories(generation=root_gen, inventories={}),
         child.uuid: t.ProviderInventories(generation=0,
                                           inventories={"VCPU": t.Inventory(total=8)})},
        [t.AllocationWrite(consumer_uuid=consumer, allocations={child.uuid: {"VCPU": 3}},
                           project_id="p", user_id="u", consumer_generation=1)])
    assert backend.get_inventories(root.uuid).inventories == {}
    assert backend.get_provider_usages(child.uuid) == {"VCPU": 3}
    assert backend.get_consumer_allocations(consumer).allocations == {child.uuid: {"VCPU": 3}}


def test_a_reshape_at_a_stale_generation_changes_nothing(backend, make_provider):
    root = make_provider({"VCPU": 8})
    child = backend.create_provider(unique(), parent_uuid=root.uuid)
    with pytest.raises(errors.ProviderGenerationConflict):
        backend.reshape(
            {root.uuid: t.ProviderInventories(generation=0, inventories={}),
             child.uuid: t.ProviderInventories(generation=0,
                                               inventories={"VCPU": t.Inventory(total=8)})},
            [])
    assert set(backend.get_inventories(root.uuid).inventories) == {"VCPU"}
    assert backend.get_inventories(child.uuid).inventories == {}
