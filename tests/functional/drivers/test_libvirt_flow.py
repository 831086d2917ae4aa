"""The libvirt driver under a real tracker: report, boot, delete, move."""

from __future__ import annotations

import pathlib

import pytest

from rtframework.compute import values as v
from rtframework.compute.values import Flavor
from rtframework.moves import live, migrate, resize
from rtframework.tracker import NoCapacity
from rtframework_drivers.libvirt import host as libvirt_host
from rtframework_drivers.libvirt.driver import LibvirtDriver
from tests.fixtures.libvirt_binding import require_binding
from tests.functional.drivers.conftest import Cloud, host_conf

pytestmark = pytest.mark.placement

FIXTURES = pathlib.Path(__file__).resolve().parents[2] / "fixtures" / "libvirt"
SMALL = Flavor("m1.small", {"VCPU": 2, "MEMORY_MB": 1024, "DISK_GB": 10})


@pytest.fixture
def cloud(conf, fresh_backend, store, tmp_path, monkeypatch):
    require_binding()
    class Stats:  # a 500 GiB instances filesystem on any machine
        f_blocks = 500 * 262144
        f_frsize = 4096

    monkeypatch.setattr(libvirt_host.os, "statvfs", lambda path: Stats)
    c = Cloud(conf, fresh_backend, store, "libvirt")
    yield c
    c.shutdown()


def add_libvirt_host(cloud, tmp_path, host, fixture="small-host.xml", **opts):
    # Every test:///file connection is a private hypervisor; the node name
    # tells two of them apart (they share this machine's hostname).
    hconf = host_conf(LibvirtDriver, "libvirt", connection_uri=f"test://{FIXTURES / fixture}",
                      node_name=f"lv-{host}", instances_path=str(tmp_path / host), **opts)
    return cloud.add_host(host, LibvirtDriver(hconf, host))


def domain(cloud, host, uuid):
    conn = cloud.ctx.drivers[host]._conn
    return conn.lookupByUUIDString(uuid) if uuid in cloud.ctx.drivers[host].list_instances() \
        else None


def test_periodic_reports_the_host_with_the_frameworks_overlay(cloud, tmp_path):
    tracker = add_libvirt_host(cloud, tmp_path, "a", fixture="big-host.xml",
                               cpu_dedicated_set="2,4")
    assert cloud.providers() == {"lv-a": tracker.driver.get_node_uuid("lv-a")}
    # The driver reports totals; reserved memory (512 MB by default) and the
    # initial ratios are the tracker's. PCPU is never overcommitted.
    assert cloud.inventory("lv-a") == {
        "VCPU": (1, 0, 4.0), "PCPU": (2, 0, 1.0),
        "MEMORY_MB": (786432, 512, 1.0), "DISK_GB": (500, 0, 1.0)}
    assert cloud.traits("lv-a") == {"COMPUTE_NODE", "HW_ARCH_I686"}
    (again,) = tracker.update_available_resource()
    assert (again.created, again.updated, again.removed) == ((), (), ())


def test_boot_spawns_a_domain_and_delete_removes_it(cloud, tmp_path):
    tracker = add_libvirt_host(cloud, tmp_path, "a")
    vm = cloud.boot("a", SMALL)
    assert vm.vm_state == v.ACTIVE and vm.node == "lv-a"
    dom = domain(cloud, "a", vm.uuid)
    assert dom.isActive() and dom.name() == "vm"
    assert dom.info()[3] == 2 and dom.info()[1] == 1024 * 1024
    assert cloud.usages() == {"lv-a": dict(SMALL.resources)}

    tracker.update_available_resource()  # the periodic keeps a running guest's claim
    assert cloud.usages() == {"lv-a": dict(SMALL.resources)}

    tracker.delete(vm.uuid)
    assert tracker.driver.list_instances() == []
    assert cloud.usages() == {"lv-a": {}}


def test_boot_beyond_the_hosts_memory_spawns_nothing(cloud, tmp_path):
    add_libvirt_host(cloud, tmp_path, "a")  # 8192 MB, 512 reserved
    with pytest.raises(NoCapacity, match="MEMORY_MB 7680 free of 7680"):
        cloud.boot("a", Flavor("huge", {"VCPU": 1, "MEMORY_MB": 8000}))
    assert cloud.ctx.drivers["a"].list_instances() == []


@pytest.mark.parametrize("strategy", ["migration", "doubled"])
def test_migrate_then_confirm_leaves_one_domain_on_the_destination(cloud, tmp_path, config,
                                                                 strategy):
    config.config(move_claim_strategy=strategy, group="placement")
    add_libvirt_host(cloud, tmp_path, "a")
    add_libvirt_host(cloud, tmp_path, "b")
    vm = cloud.boot("a", SMALL)
    mig = migrate.migrate(cloud.ctx, vm.uuid, to_host="b")
    # Until confirmed, both copies exist and both hosts hold the claim.
    assert domain(cloud, "a", vm.uuid) is not None and domain(cloud, "b", vm.uuid).isActive()
    assert cloud.usages() == {"lv-a": dict(SMALL.resources), "lv-b": dict(SMALL.resources)}
    for tracker in cloud.trackers.values():  # a periodic mid-move heals nothing away
        tracker.update_available_resource()
    assert cloud.usages() == {"lv-a": dict(SMALL.resources), "lv-b": dict(SMALL.resources)}

    resize.confirm(cloud.ctx, mig.uuid)
    assert domain(cloud, "a", vm.uuid) is None
    assert domain(cloud, "b", vm.uuid).isActive()
    assert cloud.usages() == {"lv-a": {}, "lv-b": dict(SMALL.resources)}


@pytest.mark.parametrize("strategy", ["migration", "doubled"])
def test_migrate_then_revert_keeps_the_source_domain(cloud, tmp_path, config, strategy):
    config.config(move_claim_strategy=strategy, group="placement")
    add_libvirt_host(cloud, tmp_path, "a")
    add_libvirt_host(cloud, tmp_path, "b")
    vm = cloud.boot("a", SMALL)
    source_id = domain(cloud, "a", vm.uuid).ID()
    mig = migrate.migrate(cloud.ctx, vm.uuid, to_host="b")
    resize.revert(cloud.ctx, mig.uuid)
    assert domain(cloud, "b", vm.uuid) is None
    assert domain(cloud, "a", vm.uuid).ID() == source_id  # the same guest, never stopped
    assert cloud.store.get_instance(vm.uuid).host == "a"
    assert cloud.usages() == {"lv-a": dict(SMALL.resources), "lv-b": {}}


def test_same_host_resize_restarts_the_domain_with_the_new_size(cloud, tmp_path):
    add_libvirt_host(cloud, tmp_path, "a")
    vm = cloud.boot("a", SMALL)
    bigger = Flavor("m1.medium", {"VCPU": 3, "MEMORY_MB": 2048, "DISK_GB": 10})
    mig = resize.run(cloud.ctx, vm.uuid, bigger, to_host="a")
    dom = domain(cloud, "a", vm.uuid)
    assert (dom.info()[3], dom.info()[1]) == (3, 2048 * 1024)
    resize.confirm(cloud.ctx, mig.uuid)
    assert cloud.ctx.drivers["a"].list_instances() == [vm.uuid]
    assert cloud.usages() == {"lv-a": dict(bigger.resources)}


def test_live_migration_complete_and_rollback(cloud, tmp_path):
    add_libvirt_host(cloud, tmp_path, "a")
    add_libvirt_host(cloud, tmp_path, "b")
    vm = cloud.boot("a", SMALL)
    mig = live.start(cloud.ctx, vm.uuid, to_host="b")
    live.rollback(cloud.ctx, mig.uuid)
    assert (domain(cloud, "a", vm.uuid) is not None, domain(cloud, "b", vm.uuid)) == (True, None)
    assert cloud.usages() == {"lv-a": dict(SMALL.resources), "lv-b": {}}

    mig = live.start(cloud.ctx, vm.uuid, to_host="b")
    live.complete(cloud.ctx, mig.uuid)
    assert (domain(cloud, "a", vm.uuid), domain(cloud, "b", vm.uuid).isActive()) == (None, 1)
    assert cloud.usages() == {"lv-a": {}, "lv-b": dict(SMALL.resources)}


def test_a_vgpu_guest_is_claimed_on_a_gpu_child_and_its_disk_on_the_shared_pool(
        cloud, tmp_path):
    from rtframework import sharing
    from rtframework.placement import types as t

    aggregate = "5e3c1f0a-6b1d-4c8e-9a53-2f0d6c1e7b44"
    sharing.ensure_pool(cloud.backend, "lv-pool", aggregate,
                        {"DISK_GB": t.Inventory(total=1000)})
    tracker = add_libvirt_host(cloud, tmp_path, "a", fixture="gpu-host.xml",
                               mdev_types=["nvidia-223"], shared_storage_aggregate=aggregate)
    names = cloud.providers()
    assert {"lv-a", "lv-a_pci_0000_81_00_0", "lv-a_pci_0000_82_00_0", "lv-pool"} == set(names)
    assert cloud.inventory("lv-a_pci_0000_81_00_0") == {"VGPU": (8, 0, 1.0)}
    assert "DISK_GB" not in cloud.inventory("lv-a")
    vm = cloud.boot("a", Flavor("vgpu", {"VCPU": 1, "MEMORY_MB": 512, "DISK_GB": 10,
                                          "VGPU": 1}))
    held = cloud.backend.get_consumer_allocations(vm.uuid).allocations
    by_name = {name: dict(held[uuid]) for name, uuid in names.items() if uuid in held}
    assert by_name.pop("lv-pool") == {"DISK_GB": 10}
    assert by_name.pop("lv-a") == {"VCPU": 1, "MEMORY_MB": 512}
    assert list(by_name.values()) == [{"VGPU": 1}]  # one GPU child
    (again,) = tracker.update_available_resource()
    assert (again.created, again.updated, again.removed) == ((), (), ())
