"""Names are taken wherever UUIDs are, and shown beside them."""

from __future__ import annotations

import pytest

from tests.functional.operator.conftest import as_json

_json = as_json


@pytest.fixture
def cloud(rtf):
    for host in ("h1", "h2"):
        _json(rtf, "compute", "update", "--host", host)
    _json(rtf, "boot", "web", "--host", "h1", "--flavor-vcpus", "2", "--flavor-memory-mb", "512")
    return rtf


def _uuid_of(rtf, name):
    (rp,) = _json(rtf, "providers", "list", "--name", name)
    return rp["UUID"]


@pytest.mark.parametrize("command", [["providers", "show"], ["inventory", "show"], ["usages"]])
def test_provider_commands_take_a_name_or_a_uuid(cloud, command):
    by_name = _json(cloud, *command, "h1")
    assert by_name == _json(cloud, *command, _uuid_of(cloud, "h1"))
    assert by_name != _json(cloud, *command, "h2")


def test_unknown_provider_name_is_exit_2_naming_it(cloud):
    code, _, err = cloud("usages", "h9")
    assert code == 2 and "no resource provider with uuid or name 'h9'" in err


def test_allocations_show_by_instance_name_with_provider_names(cloud):
    rows = _json(cloud, "allocations", "show", "web")
    assert {(r["Provider name"], r["Resource class"], r["Amount"]) for r in rows} == {
        ("h1", "VCPU", 2), ("h1", "MEMORY_MB", 512)}
    assert {r["Provider"] for r in rows} == {_uuid_of(cloud, "h1")}
    code, _, err = cloud("allocations", "show", "ghost")
    assert code == 2 and "no instance with uuid or name 'ghost'" in err


def test_ambiguous_instance_name_is_refused_listing_the_candidates(cloud):
    second = _json(cloud, "boot", "web", "--host", "h2", "--flavor-vcpus", "1")
    first = [i for i in _json(cloud, "instances", "list") if i["UUID"] != second["UUID"]][0]
    for args in (["allocations", "show", "web"], ["migrate", "web"], ["delete", "web"]):
        code, _, err = cloud(*args)
        assert code == 2, args
        assert "2 instances are named 'web'" in err
        assert first["UUID"] in err and second["UUID"] in err
    assert len(_json(cloud, "instances", "list")) == 2


def test_history_and_migrations_name_instances_and_providers(cloud):
    migration = _json(cloud, "migrate", "web", "--to", "h2")
    assert migration["Instance name"] == "web"
    assert [m["Instance name"] for m in _json(cloud, "migrations", "list")] == ["web"]
    history = _json(cloud, "allocations", "history", "web")
    assert ("web", "h1") == (history[0]["Consumer name"], history[0]["Provider name"])
    assert ("web", "h2") in {(r["Consumer name"], r["Provider name"]) for r in history}
    source_half = _json(cloud, "allocations", "history", migration["UUID"])
    assert ("migration of web", "h1") == (source_half[0]["Consumer name"],
                                          source_half[0]["Provider name"])
