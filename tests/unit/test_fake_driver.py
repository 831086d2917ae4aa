"""The fake driver: what it reports and what it runs."""

from __future__ import annotations

import pytest

from rtframework.driver import DriverError, InstanceSpec
from rtframework.provider_tree import ProviderTree
from rtframework_drivers.fake.driver import FakeDriver


@pytest.fixture
def fake(conf):
    FakeDriver.register_opts(conf)
    return FakeDriver(conf, "h1")


def _tree(fake, node):
    tree = ProviderTree()
    tree.new_root(node, fake.get_node_uuid(node))
    fake.update_provider_tree(tree, node)
    return tree


def test_one_node_named_after_host_with_stable_uuid(fake, conf):
    assert fake.get_available_nodes() == ["h1"]
    assert fake.get_node_uuid("h1") == FakeDriver(conf, "h1").get_node_uuid("h1")
    assert fake.get_node_uuid("h1") != FakeDriver(conf, "h2").get_node_uuid("h1")


def test_inventory_comes_from_options(fake, config):
    config.config(vcpus=8, memory_mb=4096, disk_gb=80, group="fake_driver")
    root = _tree(fake, "h1").find_by_name("h1")
    assert {rc: inv.total for rc, inv in root.inventory.items()} == {
        "VCPU": 8, "MEMORY_MB": 4096, "DISK_GB": 80}
    assert root.traits == {"COMPUTE_NODE"}


def test_child_provider_with_custom_class_and_traits(fake, config):
    config.config(child_resource_class="CUSTOM_FPGA", child_total=3,
                  child_traits=["CUSTOM_FPGA_INTEL"], nodes=["n1", "n2"], group="fake_driver")
    assert fake.get_available_nodes() == ["n1", "n2"]
    tree = _tree(fake, "n1")
    child = tree.find_by_name("n1_CUSTOM_FPGA")
    assert child.parent_uuid == fake.get_node_uuid("n1")
    assert child.inventory["CUSTOM_FPGA"].total == 3
    assert child.traits == {"CUSTOM_FPGA_INTEL"}
    assert _tree(fake, "n1") == tree  # child uuid is stable too


def test_spawn_and_destroy_track_instances(fake):
    spec = InstanceSpec(uuid="i1", name="vm", node="h1", resources={"VCPU": 1})
    fake.spawn(spec)
    assert fake.list_instances() == ["i1"]
    fake.destroy(spec)
    fake.destroy(spec)  # a missing instance is not an error
    assert fake.list_instances() == []


def test_spawn_can_be_made_to_fail(fake, config):
    spec = InstanceSpec(uuid="i1", name="vm", node="h1", resources={"VCPU": 1})
    fake.fail_spawn = lambda s: s.uuid == "i1"
    with pytest.raises(DriverError, match="i1"):
        fake.spawn(spec)
    fake.fail_spawn = None
    config.config(fail_spawn=True, group="fake_driver")
    with pytest.raises(DriverError):
        fake.spawn(spec)
    with pytest.raises(DriverError, match="no node 'elsewhere'"):
        fake.spawn(InstanceSpec(uuid="i2", name="vm", node="elsewhere", resources={}))
    assert fake.list_instances() == []
