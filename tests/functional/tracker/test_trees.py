"""Trees a driver reports: NUMA children, identical GPU children, a shared
storage pool joined through an aggregate; reservations, ratios and
aggregates on every provider."""

from __future__ import annotations

import uuid

from rtframework import sharing
from rtframework.compute import values as v
from rtframework.compute.values import Flavor
from rtframework.placement import types as t
from tests.functional.tracker.conftest import boot


def by_name(rt):
    b = rt.backend.wrapped
    tree = b.list_providers(t.ProviderQuery(in_tree=rt.node_root_uuid(rt.host)))
    return {p.name: p for p in tree}


def inventory(rt, name):
    return rt.backend.wrapped.get_inventories(by_name(rt)[name].uuid).inventories


def test_numa_children_get_the_reservation_once_and_the_ratios(make_tracker, config):
    config.config(numa_nodes=2, pcpus=8, memory_mb=8192, group="fake_driver")
    config.config(reserved_host_memory_mb=512, ram_allocation_ratio=1.5)
    rt = make_tracker("h1")
    assert rt.update_available_resource()[0].errors == ()
    assert set(by_name(rt)) == {"h1", "h1_NUMA0", "h1_NUMA1"}
    assert set(inventory(rt, "h1")) == {"VCPU", "DISK_GB"}
    numa0, numa1 = inventory(rt, "h1_NUMA0"), inventory(rt, "h1_NUMA1")
    assert (numa0["MEMORY_MB"].total, numa0["MEMORY_MB"].reserved,
            numa0["MEMORY_MB"].allocation_ratio) == (4096, 512, 1.5)
    assert (numa1["MEMORY_MB"].reserved, numa1["MEMORY_MB"].allocation_ratio) == (0, 1.5)
    assert (numa0["PCPU"].total, numa0["PCPU"].allocation_ratio) == (4, 1.0)
    # A ratio changed by the operator on a child comes back to the option.
    b = rt.backend.wrapped
    child = by_name(rt)["h1_NUMA1"].uuid
    held = b.get_inventories(child)
    b.set_inventories(child, held.generation, {
        **held.inventories, "MEMORY_MB": t.Inventory(total=4096, allocation_ratio=9.0)})
    rt.update_available_resource()
    assert inventory(rt, "h1_NUMA1")["MEMORY_MB"].allocation_ratio == 1.5
    rt.stats.reset()
    rt.update_available_resource()
    assert (rt.stats.reads, rt.stats.writes) == (1, 0), rt.stats.by_method


def test_identical_gpus_under_the_numa_children(make_tracker, config):
    config.config(numa_nodes=2, pcpus=8, gpus=2, vgpus_per_gpu=1, group="fake_driver")
    rt = make_tracker("h1")
    rt.update_available_resource()
    providers = by_name(rt)
    assert providers["h1_GPU0"].parent_uuid == providers["h1_NUMA0"].uuid
    assert providers["h1_GPU1"].parent_uuid == providers["h1_NUMA1"].uuid
    gpu = Flavor("gpu", {"VCPU": 1, "VGPU": 1})
    held = [set(rt.backend.wrapped.get_consumer_allocations(
        boot(rt, f"vm{i}", gpu).uuid).allocations) for i in range(2)]
    gpus = {providers["h1_GPU0"].uuid, providers["h1_GPU1"].uuid}
    assert set().union(*held) & gpus == gpus


def test_aggregates_the_driver_sets_are_synced_and_an_operators_kept(make_tracker, config):
    pool_agg, operator_agg = str(uuid.uuid4()), str(uuid.uuid4())
    config.config(shared_storage_aggregate=pool_agg, group="fake_driver")
    rt = make_tracker("h1")
    rt.update_available_resource()
    b, root = rt.backend.wrapped, rt.node_root_uuid("h1")
    assert b.get_provider_aggregates(root).aggregates == {pool_agg}
    held = b.get_provider_aggregates(root)
    b.set_provider_aggregates(root, held.generation, held.aggregates | {operator_agg})
    rt.update_available_resource()
    assert b.get_provider_aggregates(root).aggregates == {pool_agg, operator_agg}
    config.config(shared_storage_aggregate=None, group="fake_driver")
    rt.update_available_resource()
    assert b.get_provider_aggregates(root).aggregates == {operator_agg}


def test_disk_comes_from_the_shared_pool_and_is_healed_there(make_tracker, config, store):
    agg = str(uuid.uuid4())
    config.config(shared_storage_aggregate=agg, group="fake_driver")
    rt = make_tracker("h1")
    rt.update_available_resource()
    b = rt.backend.wrapped
    pool = sharing.ensure_pool(b, "pool", agg, {"DISK_GB": t.Inventory(total=100)})
    assert "DISK_GB" not in b.get_inventories(rt.node_root_uuid("h1")).inventories
    vm = boot(rt, "vm", Flavor("f", {"VCPU": 1, "MEMORY_MB": 256, "DISK_GB": 40}))
    assert b.get_consumer_allocations(vm.uuid).allocations == {
        rt.node_root_uuid("h1"): {"VCPU": 1, "MEMORY_MB": 256}, pool: {"DISK_GB": 40}}
    assert b.get_provider_usages(pool)["DISK_GB"] == 40
    assert rt.update_available_resource()[0].findings == ()
    assert store.list_audit_findings(consumer_uuid=vm.uuid) == []
    store.update_instance(vm.uuid, vm_state=v.DELETED)
    report = rt.update_available_resource()[0]
    assert report.healed == (vm.uuid,)
    assert b.get_provider_usages(pool)["DISK_GB"] == 0
