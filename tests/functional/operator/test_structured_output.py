"""``-f json`` and ``-f yaml`` give values a script reads as they are:
mappings, lists and null, never JSON inside a string or "" for nothing;
the table keeps its one-line texts."""

from __future__ import annotations

import json

import pytest
import yaml

from rtframework import conf as rtconf
from rtframework.placement.backend import load_backend
from tests.functional.operator.conftest import as_json

_json = as_json


@pytest.fixture
def cloud(rtf):
    for host in ("h1", "h2"):
        _json(rtf, "compute", "update", "--host", host)
    _json(rtf, "boot", "web", "--host", "h1", "--flavor-vcpus", "2", "--flavor-memory-mb", "256")
    return rtf


def test_providers_show_traits_and_aggregates_as_lists_and_no_parent_as_null(cloud):
    shown = _json(cloud, "providers", "show", "h1")
    assert shown["Parent"] is None
    assert isinstance(shown["Traits"], list) and "COMPUTE_NODE" in shown["Traits"]
    assert shown["Aggregates"] == []
    assert [p["Parent"] for p in _json(cloud, "providers", "list")] == [None, None]
    code, out, _ = cloud("providers", "show", "h1", "-f", "yaml")
    assert code == 0 and yaml.safe_load(out)["Parent"] is None
    code, out, _ = cloud("providers", "show", "h1", "-c", "Traits", "-c", "Parent")
    assert "COMPUTE_NODE" in out and "None" not in out


def test_heal_lists_the_allocations_it_wrote_as_a_mapping(cloud, ini):
    backend = load_backend(rtconf.load([str(ini)]))
    try:
        web = _json(cloud, "instances", "list")[0]["UUID"]
        backend.delete_allocations(web)
        root = _json(cloud, "providers", "show", "h1")["UUID"]
        code, out, err = cloud("heal", "--recheck-delay", "0", "-f", "json")
        assert code == 0, err
        (healed,) = json.loads(out)
        assert healed["Allocations"] == {root: {"MEMORY_MB": 256, "VCPU": 2}}
        history = _json(cloud, "allocations", "history", "web")
        assert history[-1]["After"] == {"MEMORY_MB": 256, "VCPU": 2}
        assert history[0]["Before"] == {}
    finally:
        backend.close()


def test_instances_and_migrations_give_resources_flavors_and_nothing_as_values(cloud):
    (web,) = _json(cloud, "instances", "list")
    assert web["Resources"] == {"MEMORY_MB": 256, "VCPU": 2}
    assert web["Task state"] is None
    _json(cloud, "migrate", "web", "--to", "h2")
    (move,) = _json(cloud, "migrations", "list")
    assert move["Old flavor"] == {"name": web["Flavor"],
                                  "resources": {"MEMORY_MB": 256, "VCPU": 2}}
    assert (move["Source host"], move["Dest host"]) == ("h1", "h2")
    code, out, _ = cloud("migrations", "list", "-c", "Old flavor")
    assert f"{web['Flavor']} (MEMORY_MB=256,VCPU=2)" in out


def test_inventory_traits_and_candidates_as_mappings_and_lists(cloud):
    shown = _json(cloud, "inventory", "set", "h2", "--resource", "VCPU=8",
                  "--resource", "VCPU:allocation_ratio=2")
    assert shown["Inventory"] == {"VCPU": {
        "total": 8, "reserved": 0, "min_unit": 1, "max_unit": 2147483647, "step_size": 1,
        "allocation_ratio": 2.0}}
    code, out, _ = cloud("inventory", "set", "h2", "--resource", "VCPU=8", "--resource",
                         "VCPU:allocation_ratio=2", "-c", "Inventory", "-f", "table")
    assert "VCPU=8,allocation_ratio=2.0" in out
    traits = _json(cloud, "traits", "set", "h2", "--trait", "CUSTOM_GOLD", "--trait",
                   "COMPUTE_NODE")
    assert traits["Traits"] == ["COMPUTE_NODE", "CUSTOM_GOLD"]
    (candidate,) = _json(cloud, "allocation-candidates", "list", "--resource", "VCPU=1",
                         "--required", "CUSTOM_GOLD")
    assert candidate["Allocation"] == {"VCPU": 1}
    assert candidate["Used/capacity"]["VCPU"] == {"used": 0, "capacity": 16}
    assert candidate["Traits"] == ["COMPUTE_NODE", "CUSTOM_GOLD"]


def test_compute_update_and_findings_give_lists_and_null(cloud, ini):
    (report,) = _json(cloud, "compute", "update", "--host", "h2")
    assert report["Created"] == [] and report["Errors"] == []
    backend = load_backend(rtconf.load([str(ini)]))
    try:
        h2 = _json(cloud, "providers", "show", "h2")["UUID"]
        stranger = "5d2c1b8e-3f4a-4e6b-9c7d-8e9f0a1b2c3d"
        backend.put_allocations(stranger, {h2: {"VCPU": 1}}, project_id="p", user_id="u",
                                consumer_generation=None)
    finally:
        backend.close()
    code, out, _ = cloud("check", "--recheck-delay", "0", "-f", "json")
    (found,) = json.loads(out)
    assert (code, found["Consumer"], found["Consumer name"], found["Provider"]) == (
        3, stranger, None, None)
    services = _json(cloud, "compute-services", "list")
    assert [s["Disabled reason"] for s in services] == [None, None]
