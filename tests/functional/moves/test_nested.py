"""Moves of an instance that also holds a device on a child provider."""

from __future__ import annotations

import pytest

from rtframework import scheduler
from rtframework.compute import values as v
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
    assert cloud.violations() == []
    resize.confirm(cloud.ctx, mig.uuid)
    assert held_devices(cloud, vm.uuid) == {device_of(cloud, "b")}
    assert cloud.allocations(mig.uuid) == {}


def test_no_free_device_on_the_destination_refuses_the_move(fpga_cloud):
    cloud = fpga_cloud
    cloud.boot("b", {"VCPU": 1, "MEMORY_MB": 256, "CUSTOM_FPGA": 1}, name="holder")
    vm = cloud.boot("a", F)
    full = f"{cloud.host('b')}_CUSTOM_FPGA is full for CUSTOM_FPGA=1: 0 free of 1"
    with pytest.raises(scheduler.NoValidHost, match=full):
        live.start(cloud.ctx, vm.uuid, to_host=cloud.host("b"))
    assert held_devices(cloud, vm.uuid) == {device_of(cloud, "a")}
    assert cloud.store.get_instance(vm.uuid).task_state is None


@pytest.fixture(params=["doubled", "migration"])
def two_device_cloud(request, cloud, config):
    """Hosts a, b with two identical one-FPGA children each."""
    config.config(move_claim_strategy=request.param, group="placement")
    config.config(child_resource_class="CUSTOM_FPGA", child_total=1, child_count=2,
                  group="fake_driver")
    cloud.add_host("a")
    cloud.add_host("b")
    return cloud


def devices_of(cloud, label):
    driver = cloud.trackers[label].driver
    return {driver.provider_uuid(n) for n in driver.child_names(cloud.host(label))}


@pytest.mark.parametrize("move", ["migrate", "live", "resize"])
def test_a_move_claims_what_the_candidate_says_and_starts_from_what_is_held(
        two_device_cloud, move):
    # Each instance holds a different one of two identical children: a move
    # must start from what each one holds and claim the child the chosen
    # candidate names, whichever it is.
    cloud = two_device_cloud
    vms = [cloud.boot("a", F, name=f"vm{i}") for i in range(2)]
    assert set().union(*(held_devices(cloud, vm.uuid) for vm in vms)) == devices_of(cloud, "a")
    for vm in vms:
        if move == "migrate":
            mig = migrate.migrate(cloud.ctx, vm.uuid, to_host=cloud.host("b"))
            resize.confirm(cloud.ctx, mig.uuid)
        elif move == "live":
            mig = live.start(cloud.ctx, vm.uuid, to_host=cloud.host("b"))
            live.complete(cloud.ctx, mig.uuid)
        else:
            bigger = {**F, "VCPU": 3}
            mig = resize.run(cloud.ctx, vm.uuid, v.Flavor("bigger", bigger),
                             to_host=cloud.host("b"))
            resize.confirm(cloud.ctx, mig.uuid)
        assert cloud.allocations(mig.uuid) == {}
    assert set().union(*(held_devices(cloud, vm.uuid) for vm in vms)) == devices_of(cloud, "b")
    for label in ("a", "b"):
        cloud.periodic(label)
    assert cloud.violations() == []


def test_a_revert_gives_back_the_device_the_instance_held(two_device_cloud):
    cloud = two_device_cloud
    vms = [cloud.boot("a", F, name=f"vm{i}") for i in range(2)]
    before = {vm.uuid: cloud.backend.get_consumer_allocations(vm.uuid).allocations
              for vm in vms}
    for vm in vms:
        mig = migrate.migrate(cloud.ctx, vm.uuid, to_host=cloud.host("b"))
        resize.revert(cloud.ctx, mig.uuid)
    after = {vm.uuid: cloud.backend.get_consumer_allocations(vm.uuid).allocations
             for vm in vms}
    assert after == before
