"""The bare-metal driver under a real tracker: report, boot, delete,
removed nodes, moves between conductors."""

from __future__ import annotations

import json
import pathlib
import shutil

import pytest

from rtframework.compute import values as v
from rtframework.compute.values import Flavor
from rtframework.moves import migrate, resize
from rtframework.tracker import NoCapacity
from rtframework_drivers.baremetal.driver import BaremetalDriver
from tests.functional.drivers.conftest import Cloud, host_conf

pytestmark = pytest.mark.placement

FIXTURES = pathlib.Path(__file__).resolve().parents[2] / "fixtures" / "baremetal"
GOLD = "CUSTOM_BAREMETAL_GOLD"
SILVER = "CUSTOM_BAREMETAL_SILVER"
BM_GOLD = Flavor("bm.gold", {GOLD: 1})
UNNAMED = "1f0a5c1e-0006-4a8e-9c1e-000000000006"


@pytest.fixture
def cloud(conf, fresh_backend, store):
    c = Cloud(conf, fresh_backend, store, "baremetal")
    yield c
    c.shutdown()


def add_conductor(cloud, tmp_path, host, nodes):
    """A conductor host whose catalogue is ``nodes`` (a fixture name or a list)."""
    catalogue = tmp_path / f"{host}-nodes.json"
    if isinstance(nodes, str):
        catalogue = tmp_path / f"{host}-{nodes}"
        shutil.copy(FIXTURES / nodes, catalogue)
    else:
        catalogue.write_text(json.dumps(nodes))
    hconf = host_conf(BaremetalDriver, "baremetal", nodes_file=str(catalogue),
                      state_file=str(tmp_path / f"{host}-records.json"))
    return cloud.add_host(host, BaremetalDriver(hconf, host)), catalogue


def gold_node(n, **fields):
    return {"uuid": f"4e4e0000-0000-4000-8000-{n:012d}", "name": f"node-{n}",
            "resource_class": "baremetal-gold", "provision_state": "available", **fields}


def test_periodic_reports_one_provider_per_usable_node(cloud, tmp_path):
    add_conductor(cloud, tmp_path, "c1", "nodes.yaml")
    assert sorted(cloud.providers()) == sorted(
        ["gold-1", "gold-2", "silver-1", "silver-2", "taken-1", UNNAMED])
    assert cloud.providers()["gold-1"] == "1f0a5c1e-0001-4a8e-9c1e-000000000001"
    assert cloud.inventory("gold-1") == {GOLD: (1, 0, 1.0)}
    assert cloud.inventory("gold-2") == {GOLD: (1, 1, 1.0)}      # maintenance
    assert cloud.inventory("silver-1") == {SILVER: (1, 1, 1.0)}  # cleaning
    assert cloud.inventory("taken-1") == {GOLD: (1, 1, 1.0)}     # unknown instance
    assert cloud.traits("gold-1") == {"COMPUTE_NODE", "CUSTOM_RAID10", "HW_CPU_X86_AVX2"}


def test_boot_takes_free_nodes_only_and_delete_frees_them(cloud, tmp_path):
    tracker, _ = add_conductor(cloud, tmp_path, "c1", "nodes.yaml")
    first = cloud.boot("c1", BM_GOLD, "metal-1")
    second = cloud.boot("c1", BM_GOLD, "metal-2")
    assert (first.vm_state, first.node, second.node) == (v.ACTIVE, "gold-1", UNNAMED)
    with pytest.raises(NoCapacity):  # gold-2 in maintenance, taken-1 occupied
        cloud.boot("c1", BM_GOLD, "metal-3")
    assert set(tracker.driver.list_instances()) == {
        first.uuid, second.uuid, "9e9e0000-0000-4000-8000-000000000001"}

    tracker.update_available_resource()  # deployed nodes are in use, not reserved
    assert cloud.inventory("gold-1") == {GOLD: (1, 0, 1.0)}
    assert cloud.usages()["gold-1"] == {GOLD: 1}

    tracker.delete(first.uuid)
    assert cloud.usages()["gold-1"] == {}
    third = cloud.boot("c1", BM_GOLD, "metal-3")
    assert third.node == "gold-1"


def test_catalogue_edits_reach_placement_at_the_next_periodic(cloud, tmp_path):
    tracker, catalogue = add_conductor(cloud, tmp_path, "c1", [gold_node(1), gold_node(2)])
    catalogue.write_text(json.dumps([gold_node(1, maintenance=True), gold_node(2)]))
    tracker.update_available_resource()
    assert cloud.inventory("node-1") == {GOLD: (1, 1, 1.0)}
    assert cloud.boot("c1", BM_GOLD).node == "node-2"


def test_removed_nodes_lose_their_provider_once_nothing_is_allocated(cloud, tmp_path):
    tracker, catalogue = add_conductor(cloud, tmp_path, "c1", [gold_node(n) for n in (1, 2, 3)])
    vm = cloud.boot("c1", BM_GOLD)
    assert vm.node == "node-1"
    catalogue.write_text(json.dumps([gold_node(3)]))  # node-1 (in use) and node-2 (free) go

    tracker.update_available_resource()
    assert sorted(cloud.providers()) == ["node-1", "node-3"]  # node-1 kept: vm holds it
    assert cloud.usages()["node-1"] == {GOLD: 1}

    tracker.delete(vm.uuid)
    tracker.update_available_resource()
    assert sorted(cloud.providers()) == ["node-3"]


def test_a_bad_node_is_left_out_and_the_others_still_reported(cloud, tmp_path, caplog):
    caplog.set_level("ERROR")
    add_conductor(cloud, tmp_path, "c1", [gold_node(1), {"uuid": gold_node(2)["uuid"],
                                                         "name": "node-2"}])
    assert sorted(cloud.providers()) == ["node-1"]
    assert any("node 'node-2'" in r.getMessage() and "no resource_class" in r.getMessage()
               for r in caplog.records)


@pytest.mark.parametrize("strategy", ["migration", "doubled"])
def test_migrate_between_conductors_confirm_and_revert(cloud, tmp_path, config, strategy):
    config.config(move_claim_strategy=strategy, group="placement")
    c1, _ = add_conductor(cloud, tmp_path, "c1", [gold_node(1)])
    c2, _ = add_conductor(cloud, tmp_path, "c2", [gold_node(2), gold_node(3)])
    vm = cloud.boot("c1", BM_GOLD)

    mig = migrate.migrate(cloud.ctx, vm.uuid, to_host="c2")
    assert c1.driver.list_instances() == c2.driver.list_instances() == [vm.uuid]
    resize.revert(cloud.ctx, mig.uuid)
    assert (c1.driver.list_instances(), c2.driver.list_instances()) == ([vm.uuid], [])
    assert {n: u for n, u in cloud.usages().items() if u} == {"node-1": {GOLD: 1}}

    mig = migrate.migrate(cloud.ctx, vm.uuid, to_host="c2")
    resize.confirm(cloud.ctx, mig.uuid)
    assert (c1.driver.list_instances(), c2.driver.list_instances()) == ([], [vm.uuid])
    (dest,) = [n for n, u in cloud.usages().items() if u]
    assert dest in ("node-2", "node-3")
    for tracker in (c1, c2):
        tracker.update_available_resource()
    assert cloud.inventory("node-1") == {GOLD: (1, 0, 1.0)}  # free again, not reserved
    assert cloud.inventory(dest) == {GOLD: (1, 0, 1.0)}


def test_a_node_holding_an_instance_the_framework_records_is_not_reserved(cloud, tmp_path,
                                                                           store):
    # The catalogue says both nodes are deployed; only one instance is in the
    # framework's records for this host (the driver never spawned either,
    # e.g. its state file was lost). The tracker tells the driver which
    # instances it knows, so only the stranger's node is reserved.
    recorded = store.create_instance("adopted", BM_GOLD, project_id="p", user_id="u",
                                     host="c1", node="node-1", vm_state=v.ACTIVE)
    nodes = [gold_node(1, provision_state="active", instance_uuid=recorded.uuid),
             gold_node(2, provision_state="active",
                       instance_uuid="5a5a0000-0000-4000-8000-000000000002")]
    add_conductor(cloud, tmp_path, "c1", nodes)
    assert cloud.inventory("node-1") == {GOLD: (1, 0, 1.0)}
    assert cloud.inventory("node-2") == {GOLD: (1, 1, 1.0)}
