"""rtf check, audit, heal and allocations history, end to end through ``rtf``."""

from __future__ import annotations

import dataclasses
import io
import json
import types
import uuid

import pytest

from rtframework import conf as rtconf
from rtframework import invariants
from rtframework.cmd.audit import Check
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


@pytest.mark.parametrize("command", ["check", "audit", "heal"])
def test_check_says_on_stderr_which_instances_it_left_unjudged(rtf, monkeypatch, command):
    """An instance whose record changed while the check read placement is
    not judged (see invariants.take_snapshot), so not healed either; each
    command says so, apart from its machine-readable findings."""
    rtf("compute", "update")
    web = _boot(rtf)["UUID"]
    read = invariants.take_snapshot

    def moving_meanwhile(*args, **kwargs):
        snap = read(*args, **kwargs)
        return dataclasses.replace(snap, unsettled=snap.unsettled | {web})

    # Nothing found: 0; heal, with nothing to do, 4 as nova-manage's.
    clean = 4 if command == "heal" else 0
    monkeypatch.setattr(invariants, "take_snapshot", moving_meanwhile)
    code, out, err = rtf(command, "-f", "json", "--recheck-delay", "0")
    assert (code, json.loads(out)) == (clean, [])
    assert ("note: 1 instance(s) changed (or were created) while they were read and were not "
            "judged") in err
    assert f"{web} (web)" in err
    monkeypatch.setattr(invariants, "take_snapshot", read)
    code, out, err = rtf(command, "-f", "json", "--recheck-delay", "0")
    assert (code, json.loads(out), err) == (clean, [], "")


def test_heal_leaves_an_instance_that_changed_while_read_and_says_so(rtf, cloud,
                                                                     monkeypatch):
    backend, store = cloud
    rtf("compute", "update")
    web = _boot(rtf)["UUID"]
    backend.delete_allocations(web)  # lost behind everybody's back
    read = invariants.take_snapshot
    monkeypatch.setattr(invariants, "take_snapshot", lambda *a, **kw: dataclasses.replace(
        read(*a, **kw), unsettled=frozenset({web})))
    code, out, err = rtf("heal", "-f", "json", "--recheck-delay", "0")
    assert (code, json.loads(out)) == (4, [])
    assert f"not judged; check again to judge them: {web} (web)" in err
    assert backend.get_consumer_allocations(web).allocations == {}
    monkeypatch.setattr(invariants, "take_snapshot", read)
    assert [(h["Consumer"], h["Done"]) for h in _json(rtf, "heal")] == [(web, True)]


def test_check_names_an_orphan_and_audit_delete_removes_it(rtf, cloud):
    backend, store = cloud
    rtf("compute", "update")
    _boot(rtf)
    root = store.node_root_uuid("h1", "h1")
    stranger = str(uuid.uuid4())
    backend.put_allocations(stranger, {root: {"VCPU": 1}}, project_id="p", user_id="u",
                            consumer_generation=None)
    found = _json(rtf, "check", code=3)
    assert [(f["Kind"], f["Consumer"], f["Provider"]) for f in found] == [
        ("orphan", stranger, None)]
    assert "VCPU=1" in found[0]["Detail"]
    assert found[0]["Fix"] == "rtf audit --delete"
    removed = _json(rtf, "audit", "--delete", code=4)  # it removed one
    assert [(r["Consumer"], r["Done"]) for r in removed] == [(stranger, True)]
    assert backend.get_consumer_allocations(stranger).allocations == {}
    assert _json(rtf, "check") == []
    history = _json(rtf, "allocations", "history", stranger)
    assert [(h["Who"], h["Before"], h["After"]) for h in history] == [
        ("audit", {"VCPU": 1}, {})]


def test_a_stored_usage_that_drifted_is_found_and_recounted(rtf, cloud):
    """The sql backend stores each inventory's usage; if it ever differs
    from the allocations, check names it and recount-usage repairs it."""
    import sqlalchemy as sa

    from rtframework.placement.sql import models

    backend, store = cloud
    rtf("compute", "update")
    _boot(rtf)
    root = store.node_root_uuid("h1", "h1")
    inv, rp = models.inventories, models.resource_providers
    with backend.engine.begin() as conn:
        conn.execute(sa.update(inv).where(
            inv.c.resource_class == "VCPU",
            inv.c.resource_provider_id == sa.select(rp.c.id).where(rp.c.uuid == root)
            .scalar_subquery()).values(used=7))
    found = _json(rtf, "check", code=3)
    assert [(f["Kind"], f["Provider"]) for f in found] == [("usage_mismatch", root)]
    assert found[0]["Fix"].startswith("rtf db recount-usage")
    code, out, err = rtf("db", "recount-usage")
    assert code == 0, err
    assert out.splitlines() == [f"provider {root} VCPU: stored usage 7 -> 2",
                                "placement database: 1 inventory usage(s) recounted"]
    assert _json(rtf, "check") == []
    assert rtf("db", "recount-usage")[1] == "placement database: 0 inventory usage(s) recounted\n"


def test_heal_dry_run_changes_nothing_then_heal_reclaims(rtf, cloud):
    backend, store = cloud
    rtf("compute", "update")
    _boot(rtf)
    web = store.lookup_instance("web").uuid
    root = store.node_root_uuid("h1", "h1")
    backend.delete_allocations(web)  # lost behind everybody's back
    assert [f["Kind"] for f in _json(rtf, "audit", code=3)] == ["missing_allocation"]

    planned = _json(rtf, "heal", "--dry-run", code=0)
    assert [(p["Consumer"], p["Done"]) for p in planned] == [(web, False)]
    assert planned[0]["Allocations"] == {root: {"MEMORY_MB": 512, "VCPU": 2}}
    assert backend.get_consumer_allocations(web).allocations == {}

    healed = _json(rtf, "heal")
    assert [(h["Consumer"], h["Done"]) for h in healed] == [(web, True)]
    assert dict(backend.get_consumer_allocations(web).allocations) == {
        root: {"MEMORY_MB": 512, "VCPU": 2}}
    assert _json(rtf, "check") == []
    assert _json(rtf, "heal", code=4) == []
    history = _json(rtf, "allocations", "history", "web")
    assert [(h["Who"], h["Provider"], h["After"]) for h in history] == [
        ("h1", root, {"MEMORY_MB": 512, "VCPU": 2}),  # the boot
        ("heal", root, {"MEMORY_MB": 512, "VCPU": 2})]
    assert history[0]["Why"].startswith("claimed: boot")


def test_history_of_an_unknown_consumer_is_empty(rtf):
    rtf("compute", "update")
    assert _json(rtf, "allocations", "history", str(uuid.uuid4())) == []


def test_clean_commands_say_no_findings_in_one_line(rtf):
    rtf("compute", "update")
    _boot(rtf)
    # heal has nothing to do: 4, as nova-manage's heal_allocations.
    for args, status in ((("check",), 0), (("audit",), 0), (("audit", "--delete"), 0),
                         (("heal",), 4), (("heal", "--dry-run"), 4)):
        code, out, err = rtf(*args, "--recheck-delay", "0")
        assert (code, out) == (status, "no findings\n"), (args, err)


def test_a_shelved_claim_owned_by_no_host_is_removed_by_audit_delete(rtf, cloud):
    backend, store = cloud
    rtf("compute", "update")
    web = _boot(rtf)["UUID"]
    held = dict(backend.get_consumer_allocations(web).allocations)
    # What the soak of the issue left: SHELVED_OFFLOADED, no host, still
    # holding its flavor (an unfinished shelve, then a refused unshelve).
    store.update_instance(web, vm_state="SHELVED_OFFLOADED", host=None, node=None)
    rtf("compute", "update")  # the host's heal may not touch it: not its own
    assert backend.get_consumer_allocations(web).allocations == held
    found = _json(rtf, "audit", code=3)
    assert {(f["Kind"], f["Fix"]) for f in found} >= {
        ("shelved_instance_holds", "rtf audit --delete")}
    removed = _json(rtf, "audit", "--delete", code=4)
    assert [(r["Consumer"], r["Done"], r["Allocations"]) for r in removed] == [
        (web, True, held)]
    assert backend.get_consumer_allocations(web).allocations == {}
    assert _json(rtf, "audit") == [] and _json(rtf, "check") == []
    history = _json(rtf, "allocations", "history", web)
    assert history[-1]["Who"] == "audit" and history[-1]["After"] == {}
    assert "shelved instance on no host" in history[-1]["Why"]


def test_an_interrupted_boot_is_a_finding_that_reconcile_fixes(rtf, cloud):
    backend, store = cloud
    rtf("compute", "update")
    web = _boot(rtf)["UUID"]
    store.update_instance(web, vm_state="BUILDING")  # a boot killed after its claim
    assert _json(rtf, "check") == []  # a boot may be running: not stale yet
    (found,) = _json(rtf, "check", "--stale-after", "0", code=3)
    assert (found["Kind"], found["Consumer"]) == ("interrupted_operation", web)
    assert found["Fix"] == "rtf compute reconcile --host h1"
    assert rtf("compute", "reconcile")[0] == 0
    assert _json(rtf, "check", "--stale-after", "0") == []
    assert backend.get_consumer_allocations(web).allocations == {}


def test_heal_rewrites_wrong_and_multi_host_allocations(rtf, cloud):
    backend, store = cloud
    rtf("compute", "update")
    web = _boot(rtf)["UUID"]
    root = store.node_root_uuid("h1", "h1")
    current = backend.get_consumer_allocations(web)
    backend.put_allocations(web, {root: {"VCPU": 1, "MEMORY_MB": 512}}, project_id="demo",
                            user_id="demo", consumer_generation=current.generation)
    assert [f["Kind"] for f in _json(rtf, "check", code=3)] == ["wrong_allocation"]
    (healed,) = _json(rtf, "heal")
    assert (healed["Consumer"], healed["Done"]) == (web, True)
    assert dict(backend.get_consumer_allocations(web).allocations) == {
        root: {"MEMORY_MB": 512, "VCPU": 2}}
    assert _json(rtf, "check") == [] and _json(rtf, "heal", code=4) == []


def test_the_unjudged_note_names_ten_instances_at_most():
    app = types.SimpleNamespace(stderr=io.StringIO())
    check = Check(app, None)
    label = types.SimpleNamespace(consumer=lambda u: "" if u.endswith("0") else f"vm-{u}")
    check._say_unjudged({f"u{i:02d}" for i in range(12)}, label)
    note = app.stderr.getvalue()
    assert note.startswith("note: 12 instance(s) changed (or were created) while they were read")
    assert "u00, u01 (vm-u01)," in note  # no empty "()" for an instance without a name
    assert note.endswith("u09 (vm-u09) and 2 more\n")
    assert "u10" not in note
