"""The osc-placement and nova commands that decommission and repair:
provider create/delete, allocation set/unset/delete, resource class and
trait delete, compute-services delete, instances/migrations show. Each
refuses what would break the accounting, says why, and changes nothing."""

from __future__ import annotations

import pytest

from tests.functional.operator.conftest import as_json

_json = as_json
FOREIGN = "3c9d6a1e-7b2f-4e8d-a5c4-1f0e9d8c7b6a"


@pytest.fixture
def cloud(rtf):
    for host in ("h1", "h2"):
        _json(rtf, "compute", "update", "--host", host)
    _json(rtf, "boot", "web", "--host", "h1", "--flavor-vcpus", "2", "--flavor-memory-mb", "256")
    return rtf


def _state(rtf):
    """What a refused command must leave as it was."""
    return (_json(rtf, "providers", "list"), _json(rtf, "compute-services", "list"),
            _json(rtf, "compute-nodes", "list"), _json(rtf, "instances", "list", "--all"),
            _json(rtf, "usages", "h1"), _json(rtf, "usages", "h2"))


def _refused(rtf, *args, says: str, status: int = 1):
    before = _state(rtf)
    code, _, err = rtf(*args)
    assert code == status, err
    assert says in err and "Traceback" not in err, err
    assert _state(rtf) == before


def test_provider_create_child_and_delete(cloud):
    root = _json(cloud, "providers", "create", "pool")
    assert (root["Parent"], root["Generation"]) == (None, 0)
    child = _json(cloud, "providers", "create", "pool-disk", "--parent-provider", "pool")
    assert (child["Parent"], child["Root"]) == (root["UUID"], root["UUID"])
    _refused(cloud, "providers", "delete", "pool", says="has child providers: pool-disk")
    assert cloud("providers", "delete", "pool-disk") == (0, "deleted provider pool-disk "
                                                         f"({child['UUID']})\n", "")
    assert cloud("providers", "delete", "pool")[0] == 0
    assert {p["Name"] for p in _json(cloud, "providers", "list")} == {"h1", "h2"}
    assert cloud("providers", "delete", "pool")[0] == 2  # unknown: a usage error


def test_a_provider_holding_allocations_or_a_nodes_is_not_deleted(cloud):
    _refused(cloud, "providers", "delete", "h2",
             says="is compute node h2 of host h2, whose agent would report it again")
    pool = _json(cloud, "providers", "create", "pool")["UUID"]
    _json(cloud, "inventory", "set", "pool", "--resource", "DISK_GB=100")
    _json(cloud, "allocations", "set", FOREIGN, "--allocation", "rp=pool,DISK_GB=10",
          "--project-id", "p", "--user-id", "u")
    _refused(cloud, "providers", "delete", "pool",
             says=f"provider pool ({pool}) holds allocations of 1 consumer(s): {FOREIGN}")


def test_allocations_set_unset_delete_on_a_foreign_consumer(cloud):
    got = _json(cloud, "allocations", "set", FOREIGN, "--allocation", "rp=h2,VCPU=1,MEMORY_MB=64",
                "--project-id", "p", "--user-id", "u")
    h2 = _json(cloud, "providers", "show", "h2")["UUID"]
    assert got["Allocations"] == {h2: {"MEMORY_MB": 64, "VCPU": 1}}
    assert (got["Project"], got["User"]) == ("p", "u")
    got = _json(cloud, "allocations", "unset", FOREIGN, "--provider", "h2",
                "--resource-class", "VCPU")
    assert got["Allocations"] == {h2: {"MEMORY_MB": 64}}
    got = _json(cloud, "allocations", "delete", FOREIGN)
    assert (got["Allocations"], got["Consumer generation"]) == ({}, None)
    history = _json(cloud, "allocations", "history", FOREIGN)
    assert [h["Who"] for h in history] == ["operator"] * 3
    assert cloud("allocations", "delete", FOREIGN)[0] == 2  # holds nothing
    _refused(cloud, "allocations", "set", FOREIGN, "--allocation", "rp=h2,VCPU=1",
             says="holds nothing yet: give --project-id and --user-id", status=2)
    _refused(cloud, "allocations", "set", FOREIGN, "--allocation", "rp=h2,VCPU=1,VCPU=2",
             "--project-id", "p", "--user-id", "u", says="names VCPU twice", status=2)


def test_allocations_of_an_instance_are_not_written_by_hand(cloud):
    web = _json(cloud, "instances", "show", "web")["UUID"]
    for args in (("set", web, "--allocation", "rp=h2,VCPU=1"),
                 ("unset", web, "--provider", "h1"), ("delete", web)):
        _refused(cloud, "allocations", *args,
                 says=f"consumer {web} is instance web, ACTIVE on h1: it holds its flavor")


def test_resource_class_and_trait_delete_refuse_what_is_in_use(cloud):
    _json(cloud, "inventory", "set", "h2", "--resource", "CUSTOM_FPGA=2", "--amend")
    _refused(cloud, "resource-classes", "delete", "CUSTOM_FPGA",
             says="resource class CUSTOM_FPGA is in the inventory of 1 provider(s)")
    _json(cloud, "inventory", "delete", "h2", "--resource-class", "CUSTOM_FPGA")
    assert cloud("resource-classes", "delete", "CUSTOM_FPGA")[0] == 0
    assert "CUSTOM_FPGA" not in {r["Name"] for r in _json(cloud, "resource-classes", "list")}
    assert cloud("resource-classes", "delete", "VCPU")[0] == 2

    _json(cloud, "traits", "set", "h2", "--trait", "CUSTOM_GOLD")
    _refused(cloud, "traits", "delete", "CUSTOM_GOLD", says="CUSTOM_GOLD is a trait of 1 "
             "provider(s): h2; take it off them first")
    _json(cloud, "traits", "set", "h2")
    assert cloud("traits", "delete", "CUSTOM_GOLD")[0] == 0
    assert _json(cloud, "traits", "list", "--prefix", "CUSTOM_") == []
    assert cloud("traits", "delete", "HW_CPU_X86_AVX2")[0] == 2


def test_compute_service_delete_decommissions_an_empty_down_host(cloud):
    _refused(cloud, "compute-services", "delete", "h2", says="host h2 is up")
    assert cloud("compute-services", "set", "h1", "--down")[0] == 0
    _refused(cloud, "compute-services", "delete", "h1",
             says="host h1 still has 1 instance(s): web (")
    assert cloud("compute-services", "set", "h2", "--down")[0] == 0
    _json(cloud, "allocations", "set", FOREIGN, "--allocation", "rp=h2,VCPU=1",
          "--project-id", "p", "--user-id", "u")
    _refused(cloud, "compute-services", "delete", "h2",
             says=f"holds allocations of 1 consumer(s): {FOREIGN}")
    _json(cloud, "allocations", "delete", FOREIGN)
    code, out, err = cloud("compute-services", "delete", "h2")
    assert (code, out) == (0, "deleted compute service h2 and 1 provider(s): h2\n"), err
    assert [s["Host"] for s in _json(cloud, "compute-services", "list")] == ["h1"]
    assert {p["Name"] for p in _json(cloud, "providers", "list")} == {"h1"}
    assert _json(cloud, "compute-nodes", "list", "--host", "h2") == []
    assert cloud("compute-services", "delete", "h2")[0] == 2


def test_instances_and_migrations_show(cloud):
    shown = _json(cloud, "instances", "show", "web")
    h1 = _json(cloud, "providers", "show", "h1")["UUID"]
    assert shown["Allocations"] == {h1: {"MEMORY_MB": 256, "VCPU": 2}}
    assert shown["Unfinished migration"] is None and shown["User"] == "demo"
    moved = _json(cloud, "migrate", "web", "--to", "h2")
    assert _json(cloud, "instances", "show", "web")["Unfinished migration"] == moved["UUID"]
    migration = _json(cloud, "migrations", "show", moved["UUID"])
    assert (migration["Status"], migration["Instance name"]) == (moved["Status"], "web")
    assert migration["Allocations"] == {h1: {"MEMORY_MB": 256, "VCPU": 2}}
    assert cloud("migrations", "show", FOREIGN)[0] == 2
    assert cloud("instances", "show", "ghost")[0] == 2
