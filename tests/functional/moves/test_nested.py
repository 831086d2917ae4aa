"""Moves of an instance that also holds a device on a child provider."""

from __future__ import annotations

import pytest

from rtframework import audit, scheduler
from rtframework.moves import live, migrate, resize

pytestmark = pytest.mark.placement

F = {"VCPU": 2, "MEMORY_MB": 1024, "DISK_GB": 10, "CUSTOM_FPGA": 1}


@pytest.fixture(params=["doubled", "migration"])
def fpga_cloud(request, cloud, config):
    config.config(move_claim_strategy=request.param, group="placement")
    config.config(child_resource_class="CUSTOM_FPGA", child_total=1, group="fake_driver")
    cloud.add_host("a")
    cloud.add_host("b")
    return cloud


def device_of(cloud, label):
    tracker = cloud.trackers[label]
    return tracker.driver.get_node_uuid(tracker.driver.child_name(cloud.host(label)))


def held_devices(cloud, consumer):
    held = cloud.backend.get_consumer_allocations(consumer).allocations
    return {p for p, res in held.items() if "CUSTOM_FPGA" in res}


def test_the_device_moves_with_the_instance(fpga_cloud):
    cloud = fpga_cloud
    vm = cloud.boot("a", F)
    mig = migrate.migrate(cloud.ctx, vm.uuid, to_host=cloud.host("b"))
    both = {device_of(cloud, "a"), device_of(cloud, "b")}
    assert held_devices(cloud, vm.uuid) | held_devices(cloud, mig.uuid) == both
    for label in ("a", "b"):
        cloud.periodic(label)
    assert audit.check_move_invariants(cloud.backend, cloud.store, cloud.conf) == []
    resize.confirm(cloud.ctx, mig.uuid)
    assert held_devices(cloud, vm.uuid) == {device_of(cloud, "b")}
    assert cloud.allocations(mig.uuid) == {}


def test_no_free_device_on_the_destination_refuses_the_move(fpga_cloud):
    cloud = fpga_cloud
    cloud.boot("b", {"VCPU": 1, "MEMORY_MB": 256, "CUSTOM_FPGA": 1}, name="holder")
    vm = cloud.boot("a", F)
    with pytest.raises(scheduler.NoValidHost, match="no candidate could be claimed"):
        live.start(cloud.ctx, vm.uuid, to_host=cloud.host("b"))
    assert held_devices(cloud, vm.uuid) == {device_of(cloud, "a")}
    assert cloud.store.get_instance(vm.uuid).task_state is None
