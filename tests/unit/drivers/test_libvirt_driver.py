"""The libvirt driver against libvirt's real in-process test driver."""

from __future__ import annotations

import pathlib
import socket
import sys
import xml.etree.ElementTree as ET

import pytest

from rtframework import conf as rtconf
from rtframework.driver import DriverError, InstanceSpec, load_driver
from rtframework.provider_tree import ProviderTree
from rtframework_drivers.libvirt import host
from rtframework_drivers.libvirt.driver import MISSING_BINDING, LibvirtDriver
from tests.fixtures.libvirt_binding import require_binding

ROOT = pathlib.Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures" / "libvirt"
# libvirt's test driver answers getHostname with the machine's own name.
HOSTNAME = socket.gethostname()
UUID1 = "0b7c1b8e-3d0a-4f0e-9a61-4c3f1d2e5a01"
UUID2 = "0b7c1b8e-3d0a-4f0e-9a61-4c3f1d2e5a02"


def uri(fixture: str) -> str:
    return f"test://{FIXTURES / fixture}"


@pytest.fixture(autouse=True)
def fixed_disk(monkeypatch):
    """A 500 GiB instances filesystem, so inventories are exact on any machine."""
    class Stats:
        f_blocks = 500 * 262144
        f_frsize = 4096

    monkeypatch.setattr(host.os, "statvfs", lambda path: Stats)


@pytest.fixture
def make_driver(conf, config, tmp_path):
    require_binding()
    LibvirtDriver.register_opts(conf)
    started = []

    def make(connection_uri: str = uri("small-host.xml"), host_name: str = "h1", **opts):
        config.config(group="libvirt", connection_uri=connection_uri,
                      instances_path=str(tmp_path / "instances"), **opts)
        driver = LibvirtDriver(conf, host_name)
        driver.init_host()
        started.append(driver)
        return driver

    yield make
    for driver in started:
        driver.cleanup_host()


def report(driver):
    tree = ProviderTree()
    (node,) = driver.get_available_nodes()
    tree.new_root(node, driver.get_node_uuid(node))
    driver.update_provider_tree(tree, node)
    return tree.find_by_name(node)


def totals(provider):
    return {rc: inv.total for rc, inv in provider.inventory.items()}


def test_default_test_connection_inventory_and_traits(make_driver):
    root = report(make_driver("test:///default"))
    assert totals(root) == {"VCPU": 16, "MEMORY_MB": 3072, "DISK_GB": 500}
    # The test driver is an i686 host whose only CPU features (pae, nonpae)
    # have no os-traits name, and it has no domain capabilities.
    assert root.traits == {"HW_ARCH_I686", "COMPUTE_NODE"}


@pytest.mark.parametrize(("fixture", "expected"), [
    ("small-host.xml", {"VCPU": 4, "MEMORY_MB": 8192, "DISK_GB": 500}),
    ("big-host.xml", {"VCPU": 96, "MEMORY_MB": 786432, "DISK_GB": 500}),
    ("dedicated-host.xml", {"VCPU": 8, "MEMORY_MB": 16384, "DISK_GB": 500}),
])
def test_host_shapes_give_exact_inventories(make_driver, fixture, expected):
    root = report(make_driver(uri(fixture)))
    assert totals(root) == expected
    for rc, inv in root.inventory.items():
        # The tracker overlays reserved amounts and ratios; the driver never does.
        assert (inv.reserved, inv.min_unit, inv.max_unit, inv.step_size,
                inv.allocation_ratio) == (0, 1, expected[rc], 1, 1.0)


def test_dedicated_and_shared_sets_split_vcpu_and_pcpu(make_driver):
    # The test driver's online map is always CPUs 0, 2 and 4.
    root = report(make_driver(uri("dedicated-host.xml"), cpu_shared_set="0",
                              cpu_dedicated_set="2,4"))
    assert totals(root) == {"VCPU": 1, "PCPU": 2, "MEMORY_MB": 16384, "DISK_GB": 500}


def test_dedicated_set_alone_leaves_the_other_online_cpus_shared(make_driver):
    root = report(make_driver(uri("dedicated-host.xml"), cpu_dedicated_set="2,4"))
    assert totals(root)["VCPU"] == 1 and totals(root)["PCPU"] == 2


def test_all_cpus_dedicated_omits_vcpu(make_driver):
    root = report(make_driver(uri("small-host.xml"), cpu_dedicated_set="0,2,4"))
    assert "VCPU" not in root.inventory
    assert root.inventory["PCPU"].total == 3


def test_cpu_set_naming_offline_cpus_fails_naming_them(make_driver):
    driver = make_driver(uri("dedicated-host.xml"), cpu_shared_set="0-3")
    with pytest.raises(DriverError, match=r"cpu_shared_set names CPUs 1,3 that are not online "
                                          rf"on host {HOSTNAME} \(online: 0,2,4\)"):
        report(driver)


def test_one_node_named_after_the_hypervisor_with_a_stable_uuid(make_driver):
    driver = make_driver()
    assert driver.get_available_nodes() == [HOSTNAME]
    again = make_driver(host_name="h1")
    assert again.get_node_uuid(HOSTNAME) == driver.get_node_uuid(HOSTNAME)
    assert make_driver(host_name="h2").get_node_uuid(HOSTNAME) != driver.get_node_uuid(HOSTNAME)
    with pytest.raises(DriverError, match="has no node 'elsewhere'"):
        driver.update_provider_tree(ProviderTree(), "elsewhere")


def spec(uuid=UUID1, **resources):
    return InstanceSpec(uuid=uuid, name=f"vm-{uuid[-2:]}", node=HOSTNAME,
                        resources=resources or {"VCPU": 2, "MEMORY_MB": 1024},
                        flavor_name="m1.small")


def test_spawn_destroy_list_round_trip(make_driver):
    driver = make_driver()
    assert driver.list_instances() == []
    driver.spawn(spec())
    driver.spawn(spec(UUID2, VCPU=1, MEMORY_MB=512))
    assert sorted(driver.list_instances()) == [UUID1, UUID2]

    domain = driver._conn.lookupByUUIDString(UUID1)
    assert domain.name() == "vm-01" and domain.isActive()
    state, max_kib, _, vcpus, _ = domain.info()
    assert (max_kib, vcpus) == (1024 * 1024, 2)

    driver.destroy(spec())
    driver.destroy(spec())  # a missing domain is not an error
    assert driver.list_instances() == [UUID2]
    assert driver._conn.listDefinedDomains() == []  # undefined, not only stopped


def test_spawn_without_a_name_uses_the_uuid(make_driver):
    driver = make_driver()
    driver.spawn(InstanceSpec(uuid=UUID1, name="", node=HOSTNAME,
                              resources={"VCPU": 1, "MEMORY_MB": 256}))
    assert driver._conn.lookupByUUIDString(UUID1).name() == UUID1


def test_pinned_guest_runs_on_dedicated_cpus(make_driver):
    driver = make_driver(uri("dedicated-host.xml"), cpu_shared_set="0", cpu_dedicated_set="2,4")
    driver.spawn(spec(PCPU=2, MEMORY_MB=512))
    xml = ET.fromstring(driver._conn.lookupByUUIDString(UUID1).XMLDesc())
    assert xml.find("vcpu").get("cpuset") == "2,4"
    assert xml.find("vcpu").text == "2"


def test_spawn_again_with_the_same_size_leaves_the_guest_running(make_driver):
    driver = make_driver()
    driver.spawn(spec())
    domain_id = driver._conn.lookupByUUIDString(UUID1).ID()
    driver.spawn(spec())  # e.g. a revert starting the source copy that still runs
    assert driver._conn.lookupByUUIDString(UUID1).ID() == domain_id
    assert driver.list_instances() == [UUID1]


def test_spawn_again_with_another_size_redefines_and_restarts(make_driver):
    driver = make_driver()
    driver.spawn(spec())
    driver.spawn(InstanceSpec(uuid=UUID1, name="renamed", node=HOSTNAME,
                              resources={"VCPU": 3, "MEMORY_MB": 2048}))  # same-host resize
    domain = driver._conn.lookupByUUIDString(UUID1)
    _, max_kib, _, vcpus, _ = domain.info()
    assert (domain.name(), max_kib, vcpus, domain.isActive()) == ("vm-01", 2048 * 1024, 3, 1)
    assert driver.list_instances() == [UUID1]


def test_node_name_option_overrides_the_hostname(make_driver):
    driver = make_driver(node_name="lv-a")
    assert driver.get_available_nodes() == ["lv-a"]
    assert totals(report(driver))["VCPU"] == 4
    driver.spawn(InstanceSpec(uuid=UUID1, name="x", node="lv-a",
                              resources={"VCPU": 1, "MEMORY_MB": 64}))
    with pytest.raises(DriverError, match=f"has no node '{HOSTNAME}'"):
        driver.spawn(spec(UUID2))


def test_spawn_refusals(make_driver):
    driver = make_driver()
    driver.spawn(spec())
    with pytest.raises(DriverError, match="needs VCPU or PCPU and MEMORY_MB"):
        driver.spawn(spec(UUID2, VCPU=2))
    with pytest.raises(DriverError, match="has no node 'elsewhere'"):
        driver.spawn(InstanceSpec(uuid=UUID2, name="x", node="elsewhere",
                                  resources={"VCPU": 1, "MEMORY_MB": 64}))
    assert driver.list_instances() == [UUID1]


def test_domain_name_clash_is_a_driver_error_and_leaves_nothing(make_driver):
    driver = make_driver()
    driver.spawn(spec())
    clash = InstanceSpec(uuid=UUID2, name="vm-01", node=HOSTNAME,
                         resources={"VCPU": 1, "MEMORY_MB": 64})
    with pytest.raises(DriverError, match=f"defining domain 'vm-01' for instance {UUID2}"):
        driver.spawn(clash)
    assert driver.list_instances() == [UUID1]


def test_unreadable_test_host_file_is_one_clear_line(make_driver):
    with pytest.raises(DriverError) as err:
        make_driver("test:///no/such/host.xml")
    assert str(err.value) == ("cannot connect to libvirt at test:///no/such/host.xml: "
                              "XML error: failed to parse xml document '/no/such/host.xml'")


def test_unreachable_daemon_is_one_clear_line_and_nothing_on_stderr(make_driver, capfd):
    with pytest.raises(DriverError, match=r"^cannot connect to libvirt at "
                                          r"qemu\+tcp://127.0.0.1:1/system: .*Connection refused"):
        make_driver("qemu+tcp://127.0.0.1:1/system")
    assert "libvirt:" not in capfd.readouterr().err


def test_virt_type_the_host_does_not_offer_is_refused(make_driver, conf):
    with pytest.raises(DriverError, match="virt_type 'kvm' is not offered .* offered: test"):
        make_driver(virt_type="kvm")
    # The refused connection is not kept: every later use fails the same way.
    with pytest.raises(DriverError, match="virt_type 'kvm' is not offered"):
        LibvirtDriver(conf, "h1").get_available_nodes()


def test_missing_binding_says_how_to_install_it(conf, monkeypatch):
    monkeypatch.setitem(sys.modules, "libvirt", None)  # import libvirt -> ImportError
    LibvirtDriver.register_opts(conf)
    driver = LibvirtDriver(conf, "h1")
    with pytest.raises(DriverError) as err:
        driver.init_host()
    assert str(err.value) == MISSING_BINDING
    assert "pip install 'rtframework[libvirt]'" in MISSING_BINDING
    with pytest.raises(DriverError, match="needs libvirt-python"):
        driver.get_available_nodes()  # connecting on first use fails the same way


def test_sample_config_runs_against_the_test_driver(tmp_path):
    require_binding()
    conf = rtconf.load([str(ROOT / "etc" / "rtframework" / "libvirt.conf")])
    conf.set_override("state_path", str(tmp_path))
    driver = load_driver(conf, "h1")
    assert isinstance(driver, LibvirtDriver)
    driver.init_host()
    try:
        assert totals(report(driver)) == {"VCPU": 1, "PCPU": 2, "MEMORY_MB": 3072,
                                          "DISK_GB": 500}
        assert (tmp_path / "instances").is_dir()
    finally:
        driver.cleanup_host()


def children(driver):
    """name -> (VGPU total) of the node's child providers."""
    tree = ProviderTree()
    (node,) = driver.get_available_nodes()
    tree.new_root(node, driver.get_node_uuid(node))
    driver.update_provider_tree(tree, node)
    root = tree.find_by_name(node)
    return {p.name.removeprefix(f"{node}_"): totals(p) for p in tree if p.uuid != root.uuid}


def test_each_gpu_with_mdev_types_is_a_vgpu_child(make_driver):
    driver = make_driver(uri("gpu-host.xml"))
    # Each device's first type; GPU 81 counts the mediated device that
    # exists (a guest uses it) as well as the 15 it can still create.
    assert children(driver) == {"pci_0000_81_00_0": {"VGPU": 16},
                                "pci_0000_82_00_0": {"VGPU": 8}}
    root = report(driver)
    assert totals(root) == {"VCPU": 4, "MEMORY_MB": 8192, "DISK_GB": 500}
    # The same children, with the same uuids, on every report.
    first, second = ProviderTree(), ProviderTree()
    for tree in (first, second):
        (node,) = driver.get_available_nodes()
        tree.new_root(node, driver.get_node_uuid(node))
        driver.update_provider_tree(tree, node)
    assert sorted(first.uuids()) == sorted(second.uuids())
    assert len(set(first.uuids())) == 3


def test_mdev_types_choose_the_type_and_leave_out_gpus_without_it(make_driver):
    assert children(make_driver(uri("gpu-host.xml"), mdev_types=["nvidia-223"])) == {
        "pci_0000_81_00_0": {"VGPU": 8}, "pci_0000_82_00_0": {"VGPU": 8}}
    # In order of preference: GPU 82 lacks nvidia-222 and takes the next one.
    assert children(make_driver(uri("gpu-host.xml"),
                                mdev_types=["nvidia-222", "nvidia-223"])) == {
        "pci_0000_81_00_0": {"VGPU": 16}, "pci_0000_82_00_0": {"VGPU": 8}}
    assert children(make_driver(uri("gpu-host.xml"), mdev_types=["nvidia-999"])) == {}


def test_a_host_without_mediated_devices_reports_no_children(make_driver):
    assert children(make_driver(uri("small-host.xml"))) == {}
    assert children(make_driver("test:///default")) == {}


def test_disk_from_a_shared_pool_when_its_aggregate_is_named(make_driver):
    pool = "5e3c1f0a-6b1d-4c8e-9a53-2f0d6c1e7b44"
    root = report(make_driver(uri("small-host.xml"), shared_storage_aggregate=pool))
    assert totals(root) == {"VCPU": 4, "MEMORY_MB": 8192}
    assert root.aggregates == {pool}
    local = report(make_driver(uri("small-host.xml"), shared_storage_aggregate=None))
    assert totals(local)["DISK_GB"] == 500 and local.aggregates == set()


def test_a_shared_storage_aggregate_that_is_no_uuid_is_refused_at_start(make_driver):
    with pytest.raises(DriverError, match=r"\[libvirt\] shared_storage_aggregate 'pool-1'"):
        make_driver(uri("small-host.xml"), shared_storage_aggregate="pool-1")
