"""rtf check, audit, heal and allocations history, end to end through ``rtf``."""

from __future__ import annotations

import json
import uuid

import pytest

from rtframework import conf as rtconf
from rtframework.compute.store import ComputeStore
from rtframework.placement.backend import load_backend


@pytest.fixture
def cloud(rtf, tmp_path):
    """Open the test databases the way the commands do."""
    conf = rtconf.load([str(tmp_path / "rtf.conf")])
    backend, store = load_backend(conf), ComputeStore.from_conf(conf)
    yield backend, store
    backend.close()
    store.close()


def _json(rtf, *args, code=0):
    # No re-check pause: nothing else runs while a test reads.
    extra = () if args[0] == "allocations" else ("--recheck-delay", "0")
    got, out, err = rtf(*args, "-f", "json", *extra)
    assert got == code, err
    return json.loads(out)


def _boot(rtf, name="web"):
    code, out, err = rtf("boot", name, "--flavor-vcpus", "2", "--flavor-memory-mb", "512",
                         "-f", "json")
    assert code == 0, err
    return json.loads(out)


def test_check_of_a_healthy_cloud_is_empty_and_exits_zero(rtf):
    assert rtf("compute", "update")[0] == 0
    _boot(rtf)
    assert _json(rtf, "check") == []
    assert _json(rtf, "audit") == []


def test_check_names_an_orphan_and_audit_delete_removes_it(rtf, cloud):
    backend, store = cloud
    rtf("compute", "update")
    _boot(rtf)
    root = store.node_root_uuid("h1", "h1")
    stranger = str(uuid.uuid4())
    backend.put_allocations(stranger, {root: {"VCPU": 1}}, project_id="p", user_id="u",
                            consumer_generation=None)
    found = _json(rtf, "check", code=1)
    assert [(f["Kind"], f["Consumer"], f["Provider"]) for f in found] == [
        ("orphan", stranger, "")]
    assert "VCPU=1" in found[0]["Detail"]
    removed = _json(rtf, "audit", "--delete")
    assert [(r["Consumer"], r["Done"]) for r in removed] == [(stranger, True)]
    assert backend.get_consumer_allocations(stranger).allocations == {}
    assert _json(rtf, "check") == []
    history = _json(rtf, "allocations", "history", stranger)
    assert [(h["Who"], json.loads(h["Before"]), json.loads(h["After"])) for h in history] == [
        ("audit", {"VCPU": 1}, {})]


def test_heal_dry_run_changes_nothing_then_heal_reclaims(rtf, cloud):
    backend, store = cloud
    rtf("compute", "update")
    _boot(rtf)
    web = store.lookup_instance("web").uuid
    root = store.node_root_uuid("h1", "h1")
    backend.delete_allocations(web)  # lost behind everybody's back
    assert [f["Kind"] for f in _json(rtf, "audit", code=1)] == ["missing_allocation"]

    planned = _json(rtf, "heal", "--dry-run")
    assert [(p["Consumer"], p["Done"]) for p in planned] == [(web, False)]
    assert json.loads(planned[0]["Allocations"]) == {root: {"MEMORY_MB": 512, "VCPU": 2}}
    assert backend.get_consumer_allocations(web).allocations == {}

    healed = _json(rtf, "heal")
    assert [(h["Consumer"], h["Done"]) for h in healed] == [(web, True)]
    assert dict(backend.get_consumer_allocations(web).allocations) == {
        root: {"MEMORY_MB": 512, "VCPU": 2}}
    assert _json(rtf, "check") == []
    assert _json(rtf, "heal") == []
    history = _json(rtf, "allocations", "history", "web")
    assert [(h["Who"], h["Provider"], json.loads(h["After"])) for h in history] == [
        ("h1", root, {"MEMORY_MB": 512, "VCPU": 2}),  # the boot
        ("heal", root, {"MEMORY_MB": 512, "VCPU": 2})]
    assert history[0]["Why"].startswith("claimed: boot")


def test_history_of_an_unknown_consumer_is_empty(rtf):
    rtf("compute", "update")
    assert _json(rtf, "allocations", "history", str(uuid.uuid4())) == []
