"""The periodic report: inventory, reserved, ratios, children, no-op runs."""

from __future__ import annotations

import pytest

from rtframework.placement import errors as perrors
from rtframework.placement import types as t

pytestmark = pytest.mark.placement


def root_inventory(rt, node=None):
    return rt.backend.wrapped.get_inventories(rt.node_root_uuid(node or rt.host)).inventories


def test_first_run_reports_totals_reserved_and_initial_ratios(make_tracker, config):
    config.config(reserved_host_memory_mb=512, reserved_host_cpus=1, reserved_host_disk_mb=1500)
    rt = make_tracker("h1")
    rt.update_available_resource()
    inv = root_inventory(rt)
    assert (inv["VCPU"].total, inv["VCPU"].reserved, inv["VCPU"].allocation_ratio) == (8, 1, 4.0)
    assert (inv["MEMORY_MB"].reserved, inv["MEMORY_MB"].allocation_ratio) == (512, 1.0)
    assert inv["DISK_GB"].reserved == 2  # 1500 MB rounds up to whole GB
    assert rt.backend.wrapped.get_provider_traits(rt.node_root_uuid("h1")).traits == {
        "COMPUTE_NODE"}
    assert rt.compute.node_root_uuid("h1", "h1") == rt.node_root_uuid("h1")
    assert rt.compute.is_host_up("h1", 60)


def test_reservation_larger_than_total_is_capped(make_tracker, config):
    config.config(reserved_host_cpus=64)
    rt = make_tracker("h1")
    assert rt.update_available_resource()[0].errors == ()
    assert root_inventory(rt)["VCPU"].reserved == 8


def test_configured_ratio_wins_over_placement(tracker, config):
    root = tracker.node_root_uuid("h1")
    current = tracker.backend.wrapped.get_inventories(root)
    tracker.backend.wrapped.set_inventory(root, current.generation, "VCPU",
                                          t.Inventory(total=8, max_unit=8, allocation_ratio=9.0))
    config.config(cpu_allocation_ratio=2.0)
    tracker.update_available_resource()
    assert root_inventory(tracker)["VCPU"].allocation_ratio == 2.0


def test_unset_ratio_keeps_what_placement_has(tracker, config):
    root = tracker.node_root_uuid("h1")
    current = tracker.backend.wrapped.get_inventories(root)
    # An operator sets the ratio in placement directly.
    tracker.backend.wrapped.set_inventory(root, current.generation, "MEMORY_MB", t.Inventory(
        total=8192, max_unit=8192, allocation_ratio=1.5))
    tracker.stats.reset()
    tracker.update_available_resource()
    assert tracker.stats.by_method["set_inventories"] == 0
    # A real change (more memory) keeps the operator's ratio too.
    config.config(memory_mb=16384, group="fake_driver")
    tracker.update_available_resource()
    inv = root_inventory(tracker)
    assert (inv["MEMORY_MB"].total, inv["MEMORY_MB"].allocation_ratio) == (16384, 1.5)


def test_initial_ratio_only_for_a_new_class(make_tracker, config):
    config.config(initial_disk_allocation_ratio=3.0)
    rt = make_tracker("h1")
    rt.update_available_resource()
    assert root_inventory(rt)["DISK_GB"].allocation_ratio == 3.0
    config.config(initial_disk_allocation_ratio=5.0)
    rt.update_available_resource()
    assert root_inventory(rt)["DISK_GB"].allocation_ratio == 3.0


def test_operator_change_of_reserved_is_put_back(tracker):
    root = tracker.node_root_uuid("h1")
    current = tracker.backend.wrapped.get_inventories(root)
    tracker.backend.wrapped.set_inventory(root, current.generation, "VCPU",
                                          t.Inventory(total=8, reserved=6, allocation_ratio=4.0))
    tracker.update_available_resource()
    assert root_inventory(tracker)["VCPU"].reserved == 0


@pytest.mark.parametrize("nodes", [[], ["n1", "n2"]])
def test_quiet_run_makes_no_write_and_one_read_per_node(make_tracker, config, nodes):
    config.config(nodes=nodes, child_resource_class="CUSTOM_FPGA",
                  child_traits=["CUSTOM_FPGA_X"], group="fake_driver")
    rt = make_tracker("h1")
    first = rt.update_available_resource()
    assert all(r.errors == () for r in first)
    rt.stats.reset()
    rt.update_available_resource()
    assert rt.stats.writes == 0, rt.stats.by_method
    assert rt.stats.reads <= len(rt.nodes()), rt.stats.by_method


def test_restarted_tracker_writes_nothing_when_placement_matches(tracker, make_tracker):
    again = make_tracker("h1")
    again.update_available_resource()
    assert again.stats.writes == 0, again.stats.by_method


def test_changed_total_is_one_inventory_write(tracker, config):
    config.config(vcpus=12, group="fake_driver")
    tracker.stats.reset()
    report = tracker.update_available_resource()[0]
    assert report.updated == ("h1",)
    assert tracker.stats.writes == 1, tracker.stats.by_method
    assert root_inventory(tracker)["VCPU"].total == 12


def test_child_provider_with_custom_class_and_trait(make_tracker, config):
    config.config(child_resource_class="CUSTOM_FPGA", child_total=4,
                  child_traits=["CUSTOM_FPGA_INTEL"], group="fake_driver")
    rt = make_tracker("h1")
    report = rt.update_available_resource()[0]
    assert report.created == ("h1", "h1_CUSTOM_FPGA")
    b = rt.backend.wrapped
    child = b.list_providers(t.ProviderQuery(name="h1_CUSTOM_FPGA"))[0]
    assert child.parent_uuid == rt.node_root_uuid("h1")
    assert b.get_inventories(child.uuid).inventories["CUSTOM_FPGA"].total == 4
    assert b.get_provider_traits(child.uuid).traits == {"CUSTOM_FPGA_INTEL"}
    assert "CUSTOM_FPGA" in b.list_resource_classes()


def test_vanished_child_is_removed_unless_in_use(make_tracker, config):
    config.config(child_resource_class="CUSTOM_FPGA", group="fake_driver")
    rt = make_tracker("h1")
    rt.update_available_resource()
    b = rt.backend.wrapped
    child = b.list_providers(t.ProviderQuery(name="h1_CUSTOM_FPGA"))[0].uuid
    b.put_allocations("c0ffee00-0000-0000-0000-000000000001", {child: {"CUSTOM_FPGA": 1}},
                      project_id="p", user_id="u", consumer_generation=None)
    config.config(child_resource_class=None, group="fake_driver")
    report = rt.update_available_resource()[0]
    assert report.kept == (child,)
    assert b.get_provider(child).uuid == child
    b.delete_allocations("c0ffee00-0000-0000-0000-000000000001")
    report = rt.update_available_resource()[0]
    assert report.removed == (child,)
    with pytest.raises(perrors.ProviderNotFound):
        b.get_provider(child)


def test_vanished_node_is_removed_with_its_record(make_tracker, config):
    config.config(nodes=["n1", "n2"], group="fake_driver")
    rt = make_tracker("h1")
    rt.update_available_resource()
    gone = rt.node_root_uuid("n2")
    config.config(nodes=["n1"], group="fake_driver")
    reports = rt.update_available_resource()
    assert [r.nodename for r in reports] == ["n1", "n2"]
    assert reports[1].removed == (gone,)
    assert [n.nodename for n in rt.compute.list_compute_nodes(host="h1")] == ["n1"]
    with pytest.raises(perrors.ProviderNotFound):
        rt.backend.wrapped.get_provider(gone)


def test_root_deleted_behind_our_back_is_created_again(tracker):
    root = tracker.node_root_uuid("h1")
    tracker.backend.wrapped.delete_provider(root)
    report = tracker.update_available_resource()[0]
    assert report.created == ("h1",)
    assert root_inventory(tracker)["VCPU"].total == 8
