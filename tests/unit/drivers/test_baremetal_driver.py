"""The bare-metal driver: what it reports per node, and deploy/free."""

from __future__ import annotations

import json
import logging
import pathlib
import shutil

import pytest

from rtframework import conf as rtconf
from rtframework.driver import DriverError, InstanceSpec, load_driver
from rtframework.placement.types import Inventory
from rtframework.provider_tree import ProviderTree
from rtframework_drivers.baremetal.catalogue import CatalogueError, NodeError
from rtframework_drivers.baremetal.driver import BaremetalDriver

ROOT = pathlib.Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures" / "baremetal"
GOLD = "CUSTOM_BAREMETAL_GOLD"
SILVER = "CUSTOM_BAREMETAL_SILVER"
X = "9e9e0000-0000-4000-8000-000000000001"
I1 = "7d7d0000-0000-4000-8000-000000000001"
I2 = "7d7d0000-0000-4000-8000-000000000002"


@pytest.fixture
def make_driver(conf, config, tmp_path):
    BaremetalDriver.register_opts(conf)

    def make(fixture: str = "nodes.yaml", host: str = "conductor-1") -> BaremetalDriver:
        nodes = tmp_path / fixture
        if not nodes.exists():
            shutil.copy(FIXTURES / fixture, nodes)
        config.config(group="baremetal", nodes_file=str(nodes))
        driver = BaremetalDriver(conf, host)
        driver.init_host()
        return driver

    return make


def report(driver, nodename):
    tree = ProviderTree()
    tree.new_root(nodename, driver.get_node_uuid(nodename))
    driver.update_provider_tree(tree, nodename)
    return tree.find_by_name(nodename)


def unit(reserved):
    return Inventory(total=1, reserved=reserved, min_unit=1, max_unit=1, step_size=1,
                     allocation_ratio=1.0)


def test_one_provider_per_usable_node_named_and_keyed_like_the_node(make_driver):
    driver = make_driver()
    assert driver.get_available_nodes() == [
        "gold-1", "gold-2", "silver-1", "silver-2", "taken-1",
        "1f0a5c1e-0006-4a8e-9c1e-000000000006"]
    assert driver.get_node_uuid("gold-1") == "1f0a5c1e-0001-4a8e-9c1e-000000000001"
    root = report(driver, "gold-1")
    assert root.uuid == "1f0a5c1e-0001-4a8e-9c1e-000000000001"
    assert root.inventory == {GOLD: unit(0)}
    assert root.traits == {"COMPUTE_NODE", "CUSTOM_RAID10", "HW_CPU_X86_AVX2"}


@pytest.mark.parametrize(("nodename", "inventory"), [
    ("gold-2", {GOLD: unit(1)}),          # maintenance
    ("silver-1", {SILVER: unit(1)}),      # cleaning
    ("silver-2", {SILVER: unit(1)}),      # power state error
    ("taken-1", {GOLD: unit(1)}),         # instance the framework does not know
    ("1f0a5c1e-0006-4a8e-9c1e-000000000006", {GOLD: unit(0)}),
])
def test_node_states_decide_the_reservation(make_driver, nodename, inventory):
    assert report(make_driver(), nodename).inventory == inventory


def test_an_instance_the_framework_knows_is_in_use_not_reserved(make_driver):
    driver = make_driver()
    driver.set_known_instances({X})
    assert report(driver, "taken-1").inventory == {GOLD: unit(0)}
    driver.set_known_instances(set())
    assert report(driver, "taken-1").inventory == {GOLD: unit(1)}


def test_bad_nodes_are_left_out_and_logged_once(make_driver, caplog):
    caplog.set_level(logging.ERROR)
    driver = make_driver()
    driver.get_available_nodes()
    driver.get_available_nodes()
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 2
    assert "node 'no-class' (1f0a5c1e-0007-4a8e-9c1e-000000000007) has no resource_class" \
        in errors[0]
    assert "node 'bad-trait': traits 'fast'" in errors[1]
    with pytest.raises(NodeError, match="no-class.*has no resource_class"):
        driver.update_provider_tree(ProviderTree(), "no-class")


def test_catalogue_edits_take_effect_at_the_next_call(make_driver, tmp_path):
    driver = make_driver("nodes.json")
    assert report(driver, "bm-1").inventory == {GOLD: unit(0)}
    path = tmp_path / "nodes.json"
    nodes = json.loads(path.read_text())
    nodes[0]["maintenance"] = True
    nodes[0]["traits"] = ["CUSTOM_GPU_H100"]
    del nodes[1]
    path.write_text(json.dumps(nodes))
    assert driver.get_available_nodes() == ["bm-1"]
    root = report(driver, "bm-1")
    assert root.inventory == {GOLD: unit(1)}
    assert root.traits == {"COMPUTE_NODE", "CUSTOM_GPU_H100"}


def test_malformed_catalogue_is_a_driver_error_naming_the_file(make_driver):
    with pytest.raises(CatalogueError, match=r"malformed.json is not valid JSON: .*line 3"):
        make_driver("malformed.json")
    assert issubclass(CatalogueError, DriverError)


def test_catalogue_broken_after_start_fails_the_next_call(make_driver, tmp_path):
    driver = make_driver("nodes.json")
    (tmp_path / "nodes.json").write_text("{not json")
    with pytest.raises(CatalogueError, match="nodes.json is not valid JSON"):
        driver.get_available_nodes()


def test_unset_nodes_file_is_refused(conf):
    BaremetalDriver.register_opts(conf)
    with pytest.raises(CatalogueError, match=r"\[baremetal\] nodes_file is not set"):
        BaremetalDriver(conf, "h").init_host()


def spec(uuid=I1, node="bm-1", **resources):
    return InstanceSpec(uuid=uuid, name="metal", node=node, resources=resources or {GOLD: 1},
                        flavor_name="bm.gold")


def test_spawn_occupies_destroy_frees(make_driver):
    driver = make_driver("nodes.json")
    driver.spawn(spec())
    assert driver.list_instances() == [I1]
    # Deployed by the driver, so known to it: in use, not reserved.
    assert report(driver, "bm-1").inventory == {GOLD: unit(0)}
    with pytest.raises(DriverError, match=f"node bm-1 .* already runs instance {I1}"):
        driver.spawn(spec(I2))
    driver.destroy(spec())
    driver.destroy(spec())  # a missing instance is not an error
    assert driver.list_instances() == []
    driver.spawn(spec(I2))  # free again
    assert driver.list_instances() == [I2]


def test_known_instances_override_the_drivers_own_records(make_driver):
    driver = make_driver("nodes.json")
    driver.spawn(spec())
    driver.set_known_instances(set())  # the framework no longer has I1: a leftover
    assert report(driver, "bm-1").inventory == {GOLD: unit(1)}


def test_deployments_survive_a_restart(make_driver):
    make_driver("nodes.json").spawn(spec())
    again = make_driver("nodes.json")
    assert again.list_instances() == [I1]
    with pytest.raises(DriverError, match="already runs"):
        again.spawn(spec(I2))


def test_spawn_refuses_nodes_that_cannot_be_deployed(make_driver):
    driver = make_driver()
    with pytest.raises(DriverError, match=r"gold-2 .* cannot be deployed: provision state "
                                          r"'available', maintenance True"):
        driver.spawn(spec(node="gold-2"))
    with pytest.raises(DriverError, match=f"taken-1 .* already runs instance {X}"):
        driver.spawn(spec(node="taken-1"))
    with pytest.raises(DriverError, match=f"asks for {{'VCPU': 4}}; .* one unit of {GOLD}"):
        driver.spawn(spec(node="gold-1", VCPU=4))
    with pytest.raises(NodeError, match="has no node named 'ghost'"):
        driver.spawn(spec(node="ghost"))
    assert driver.list_instances() == [X]  # only the catalogue's own instance


def test_corrupt_records_file_is_named(make_driver, conf, tmp_path):
    state = tmp_path / "records.json"
    state.write_text("[1, 2]")
    conf.set_override("state_file", str(state), "baremetal")
    with pytest.raises(DriverError, match=f"instance records {state} have no 'nodes'"):
        make_driver("nodes.json")


def test_sample_config_and_example_catalogue(tmp_path):
    conf = rtconf.load([str(ROOT / "etc" / "rtframework" / "baremetal.conf")])
    conf.set_override("state_path", str(tmp_path))
    driver = load_driver(conf, "conductor-1")
    assert isinstance(driver, BaremetalDriver)
    # The shipped config names the example beside it, from any directory.
    assert conf.baremetal.nodes_file == "baremetal-nodes.yaml"
    driver.init_host()
    assert driver.get_available_nodes() == ["rack1-gold-01", "rack1-gold-02", "rack1-silver-01"]
    assert report(driver, "rack1-silver-01").inventory == {SILVER: unit(1)}
    driver.spawn(spec(node="rack1-gold-01"))
    assert (tmp_path / "baremetal_instances.json").exists()


def test_spawn_again_on_the_same_node_is_a_no_op(make_driver):
    driver = make_driver("nodes.json")
    driver.spawn(spec())
    driver.spawn(spec())
    assert driver.list_instances() == [I1]


def test_destroy_frees_only_the_named_node(make_driver, tmp_path):
    driver = make_driver("nodes.json")
    driver.spawn(spec(node="bm-1"))
    driver.spawn(spec(node="bm-2"))  # a move between two nodes of one conductor
    driver.destroy(spec(node="bm-1"))
    assert driver.list_instances() == [I1]
    driver.spawn(spec(I2, node="bm-1"))
    with pytest.raises(DriverError, match=f"bm-2 .* already runs instance {I1}"):
        driver.spawn(spec(I2, node="bm-2"))


def test_destroy_on_a_node_gone_from_the_catalogue_frees_its_record(make_driver, tmp_path):
    driver = make_driver("nodes.json")
    driver.spawn(spec(node="bm-2"))
    path = tmp_path / "nodes.json"
    path.write_text(json.dumps(json.loads(path.read_text())[:1]))
    driver.destroy(spec(node="bm-2"))
    assert driver.list_instances() == []
