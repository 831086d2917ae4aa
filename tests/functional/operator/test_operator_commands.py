"""The operator commands Placement's and Nova's CLIs have, through ``rtf``."""

from __future__ import annotations

import datetime

import pytest

from rtframework import conf as rtconf
from rtframework.compute.store import ComputeStore
from tests.functional.operator.conftest import as_json

AGG1 = "6f9c8a1e-2d3b-4c5d-8e7f-0a1b2c3d4e51"
AGG2 = "6f9c8a1e-2d3b-4c5d-8e7f-0a1b2c3d4e52"


_json = as_json


@pytest.fixture
def cloud(rtf):
    for host in ("h1", "h2", "h3"):
        _json(rtf, "compute", "update", "--host", host)
    _json(rtf, "boot", "web", "--host", "h1", "--flavor-vcpus", "2", "--flavor-memory-mb", "512")
    return rtf


def _traits(rtf, provider):
    return set(_json(rtf, "providers", "show", provider)["Traits"])


def test_disabled_host_carries_the_status_trait_until_enabled(cloud):
    shown = _json(cloud, "compute-services", "set", "h2", "--disable",
                  "--disable-reason", "new disks")
    assert (shown["Status"], shown["Disabled reason"]) == ("disabled", "new disks")
    assert "COMPUTE_STATUS_DISABLED" in _traits(cloud, "h2")
    _json(cloud, "compute", "update", "--host", "h2")  # the host's own run keeps it
    assert "COMPUTE_STATUS_DISABLED" in _traits(cloud, "h2")
    listed = {s["Host"]: (s["Status"], s["State"]) for s in
              _json(cloud, "compute-services", "list")}
    assert listed == {"h1": ("enabled", "up"), "h2": ("disabled", "up"),
                      "h3": ("enabled", "up")}
    _json(cloud, "compute-services", "set", "h2", "--enable")
    _json(cloud, "compute", "update", "--host", "h2")
    assert "COMPUTE_STATUS_DISABLED" not in _traits(cloud, "h2")
    assert _json(cloud, "compute-services", "set", "h2", "--down")["State"] == "down"
    assert _json(cloud, "compute-services", "set", "h2", "--up")["State"] == "up"


def test_scheduler_skips_disabled_and_down_hosts(cloud):
    _json(cloud, "compute-services", "set", "h2", "--disable")
    assert _json(cloud, "migrate", "web")["Dest host"] == "h3"
    migration = _json(cloud, "migrations", "list", "--unfinished")[0]["UUID"]
    _json(cloud, "revert", migration)
    _json(cloud, "compute-services", "set", "h3", "--down")
    code, _, err = cloud("migrate", "web")
    assert code == 1 and "no host has room" in err
    assert _json(cloud, "instances", "list")[0]["Host"] == "h1"
    assert _json(cloud, "migrations", "list", "--unfinished") == []
    # A named host passes the same rules (Nova's scheduler checks a
    # requested destination too): refused, naming the host, nothing written.
    code, _, err = cloud("migrate", "web", "--to", "h2")
    assert code == 1 and "'h2' is disabled" in err
    assert _json(cloud, "migrations", "list", "--unfinished") == []


def test_forced_down_host_can_be_evacuated(cloud):
    code, _, err = cloud("evacuate", "web")
    assert code == 1 and "is up" in err
    _json(cloud, "compute-services", "set", "h1", "--down")
    evacuated = _json(cloud, "evacuate", "web", "--to", "h2")
    assert (evacuated["Source host"], evacuated["Dest host"]) == ("h1", "h2")


def test_a_host_whose_heartbeat_stopped_is_down_until_its_agent_runs_again(cloud, ini):
    """The heartbeat alone decides while nobody forced anything: a host
    not seen for longer than service_down_time is listed down and not
    scheduled to; its agent's next run brings it back."""
    conf = rtconf.load([str(ini)])
    store = ComputeStore.from_conf(conf)
    try:
        long_ago = store.get_service("h2").last_seen - datetime.timedelta(
            seconds=conf.service_down_time + 1)
        store.heartbeat("h2", at=long_ago)
    finally:
        store.close()
    listed = {s["Host"]: s for s in _json(cloud, "compute-services", "list")}
    assert {h: s["State"] for h, s in listed.items()} == {"h1": "up", "h2": "down",
                                                          "h3": "up"}
    assert listed["h2"]["Last seen"] == long_ago.isoformat(timespec="seconds")
    assert listed["h2"]["Forced down"] is False
    code, _, err = cloud("migrate", "web", "--to", "h2")
    assert code == 1 and "destination host 'h2' is down" in err
    assert _json(cloud, "migrations", "list", "--unfinished") == []
    _json(cloud, "compute", "update", "--host", "h2")
    listed = {s["Host"]: s for s in _json(cloud, "compute-services", "list")}
    assert listed["h2"]["State"] == "up"
    assert listed["h2"]["Last seen"] > long_ago.isoformat(timespec="seconds")


def test_set_without_anything_to_set_is_a_usage_error(cloud):
    assert cloud("compute-services", "set", "h1")[0] == 2
    assert cloud("compute-services", "set", "h9", "--disable")[0] == 2


def test_inventory_set_replaces_or_amends_and_delete_removes(cloud):
    shown = _json(cloud, "inventory", "set", "h3", "--resource", "VCPU=16",
                  "--resource", "VCPU:allocation_ratio=2", "--resource", "MEMORY_MB=4096")
    assert {rc: (f["total"], f["allocation_ratio"]) for rc, f in shown["Inventory"].items()} == {
        "MEMORY_MB": (4096, 1.0), "VCPU": (16, 2.0)}
    _json(cloud, "inventory", "set", "h3", "--resource", "CUSTOM_FPGA=2", "--amend")
    rows = {r["Resource class"]: r for r in _json(cloud, "inventory", "show", "h3")}
    assert set(rows) == {"CUSTOM_FPGA", "MEMORY_MB", "VCPU"}
    assert (rows["VCPU"]["Capacity"], rows["CUSTOM_FPGA"]["Total"]) == (32.0, 2)
    _json(cloud, "inventory", "delete", "h3", "--resource-class", "CUSTOM_FPGA")
    assert {r["Resource class"] for r in _json(cloud, "inventory", "show", "h3")} == {
        "MEMORY_MB", "VCPU"}


def test_inventory_in_use_and_bad_items_are_refused(cloud):
    before = _json(cloud, "inventory", "show", "h1")
    code, _, err = cloud("inventory", "delete", "h1", "--resource-class", "VCPU")
    assert code == 1 and err.strip()
    for bad in ("VCPU", "VCPU:colour=2", "VCPU=many"):
        code, _, err = cloud("inventory", "set", "h1", "--resource", bad)
        assert code == 2 and "--resource" in err
    assert _json(cloud, "inventory", "show", "h1") == before


@pytest.mark.parametrize("write", [
    ["inventory", "set", "h3", "--resource", "VCPU=4"],
    ["inventory", "delete", "h3", "--resource-class", "DISK_GB"],
    ["traits", "set", "h3", "--trait", "CUSTOM_GOLD"],
    ["aggregates", "set", "h3", "--aggregate", AGG1],
])
def test_writes_naming_a_stale_generation_are_refused_and_change_nothing(cloud, write):
    now = _json(cloud, "providers", "show", "h3")
    inventory = _json(cloud, "inventory", "show", "h3")
    code, _, err = cloud(*write, "--generation", str(now["Generation"] - 1))
    assert code == 1
    assert (f"is at generation {now['Generation']}, not {now['Generation'] - 1}" in err
            and f"--generation {now['Generation']}" in err)
    assert _json(cloud, "providers", "show", "h3") == now
    assert _json(cloud, "inventory", "show", "h3") == inventory
    shown = _json(cloud, *write, "--generation", str(now["Generation"]))
    assert shown["Generation"] == now["Generation"] + 1


def test_traits_aggregates_and_candidates(cloud):
    _json(cloud, "traits", "set", "h2", "--trait", "COMPUTE_NODE", "--trait", "CUSTOM_GOLD")
    _json(cloud, "aggregates", "set", "h3", "--aggregate", AGG1, "--aggregate", AGG2)
    assert _json(cloud, "providers", "show", "h3")["Aggregates"] == [AGG1, AGG2]

    def names(*args):
        rows = _json(cloud, "allocation-candidates", "list", "--resource", "VCPU=2", *args)
        return [r["Provider name"] for r in rows]

    assert sorted(names()) == ["h1", "h2", "h3"]
    assert names("--required", "CUSTOM_GOLD") == ["h2"]
    assert sorted(names("--forbidden", "CUSTOM_GOLD")) == ["h1", "h3"]
    assert names("--member-of", f"{AGG2},{AGG1}") == ["h3"]
    assert len(names("--limit", "1")) == 1
    assert names("--resource", "MEMORY_MB=9000") == []
    assert cloud("allocation-candidates", "list", "--resource", "VCPU=1", "--limit", "0")[0] == 2


def test_resource_classes_create(cloud):
    assert _json(cloud, "resource-classes", "create", "custom_gpu")["Name"] == "CUSTOM_GPU"
    assert "CUSTOM_GPU" in [r["Name"] for r in _json(cloud, "resource-classes", "list")]
    code, _, err = cloud("resource-classes", "create", "GPU")
    assert code == 2 and "only CUSTOM_ classes" in err
