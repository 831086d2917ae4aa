"""One exit status rule for every command: 0 done and clean, 1 a failed
step, 2 a usage or configuration error, 3 findings; heal and audit as
nova-manage's heal_allocations and placement audit."""

from __future__ import annotations

import json

import pytest

from rtframework import conf as rtconf
from rtframework.compute.store import ComputeStore
from rtframework.placement.backend import load_backend
from tests.functional.operator.conftest import as_json

_json = as_json


@pytest.fixture
def two_hosts(rtf):
    for host in ("h1", "h2"):
        assert rtf("compute", "update", "--host", host)[0] == 0
    _json(rtf, "boot", "web", "--host", "h1", "--flavor-vcpus", "1", "--flavor-memory-mb", "256")
    return rtf


def test_compute_update_with_a_failed_provider_update_exits_1(rtf, ini):
    backend = load_backend(rtconf.load([str(ini)]))
    try:
        backend.create_provider("h3")  # the name h3's node wants, under another uuid
    finally:
        backend.close()
    code, out, err = rtf("compute", "update", "--host", "h3", "-f", "json")
    assert code == 1, err
    (report,) = json.loads(out)
    (error,) = report["Errors"]
    assert error.startswith("h3: ")
    assert rtf("compute", "run", "--once", "--host", "h3")[0] == 1
    assert rtf("compute", "update", "--host", "h1")[0] == 0


def test_live_migrate_fail_exits_1_abort_and_success_exit_0(two_hosts):
    rtf = two_hosts
    code, out, _ = rtf("live-migrate", "web", "--to", "h2", "--fail", "-f", "json")
    assert (code, json.loads(out)["Status"]) == (1, "failed")
    code, out, _ = rtf("live-migrate", "web", "--to", "h2", "--abort", "-f", "json")
    assert (code, json.loads(out)["Status"]) == (0, "cancelled")
    code, out, _ = rtf("live-migrate", "web", "--to", "h2", "-f", "json")
    assert (code, json.loads(out)["Status"]) == (0, "done")


def test_refused_move_exits_1(two_hosts):
    code, _, err = two_hosts("evacuate", "web")  # h1 is up
    assert code == 1 and err.strip()


@pytest.mark.parametrize("args", [
    ["delete", "ghost"],
    ["boot", "x", "--resources", "VCPU"],
    ["instances", "list", "--no-such-option"],
    ["migrate", "web", "--to"],
    ["no-such-command"],
])
def test_usage_errors_exit_2_and_change_nothing(two_hosts, args):
    before = _json(two_hosts, "instances", "list", "--all")
    code, _, _ = two_hosts(*args)
    assert code == 2
    assert _json(two_hosts, "instances", "list", "--all") == before


def test_configuration_errors_exit_2(rtf, ini):
    ini.write_text(ini.read_text() + "[DEFAULT]\nreserved_host_cpus = -1\n")
    code, _, err = rtf("instances", "list")
    assert code == 2 and "reserved_host_cpus" in err


def test_missing_schema_with_auto_sync_off_exits_2_saying_what_to_run(rtf, ini, tmp_path):
    fresh = tmp_path / "fresh.sqlite"
    ini.write_text(f"[DEFAULT]\nstate_path = {tmp_path}\n"
                   f"[database]\nconnection = sqlite:///{fresh}\nauto_sync = false\n")
    code, _, err = rtf("instances", "list")
    assert code == 2 and "run `rtf db sync`" in err


def test_help_exits_0_and_no_command_exits_2(rtf):
    code, out, _ = rtf("--help", config=False)
    assert code == 0 and "exit status:" in out
    assert rtf(config=False)[0] == 2


@pytest.fixture
def cloud(two_hosts, ini):
    conf = rtconf.load([str(ini)])
    backend, store = load_backend(conf), ComputeStore.from_conf(conf)
    yield two_hosts, backend, store
    backend.close()
    store.close()


def _lose(backend, store, *instances):
    """Their allocations lost behind everybody's back."""
    for name in instances:
        backend.delete_allocations(store.lookup_instance(name).uuid)


def _heal(rtf, *args):
    code, out, err = rtf("heal", "--recheck-delay", "0", "-f", "json", *args)
    return code, json.loads(out), err


def test_heal_exits_as_nova_manage_heal_allocations(cloud):
    rtf, backend, store = cloud
    _json(rtf, "boot", "db", "--host", "h1", "--flavor-vcpus", "1")
    _json(rtf, "boot", "app", "--host", "h2", "--flavor-vcpus", "1")
    assert _heal(rtf)[:2] == (4, [])  # nothing to do
    _lose(backend, store, "web", "db", "app")
    code, healed, err = _heal(rtf, "--max-count", "2")
    assert code == 1 and len(healed) == 2 and all(h["Done"] for h in healed)
    assert "--max-count 2 reached: 1 instance(s) left to heal" in err
    code, healed, _ = _heal(rtf, "--max-count", "2")
    assert (code, len(healed)) == (0, 1)
    assert _heal(rtf)[:2] == (4, [])


def test_heal_of_one_instance_leaves_the_others(cloud):
    rtf, backend, store = cloud
    _json(rtf, "boot", "db", "--host", "h1", "--flavor-vcpus", "1")
    _lose(backend, store, "web", "db")
    code, healed, _ = _heal(rtf, "--instance", "db")
    assert (code, [h["Consumer name"] for h in healed]) == (0, ["db"])
    assert backend.get_consumer_allocations(store.lookup_instance("web").uuid).allocations == {}
    assert _heal(rtf, "--instance", "db")[:2] == (4, [])
    assert rtf("heal", "--instance", "ghost")[0] == 2


def test_heal_that_cannot_heal_exits_3(cloud):
    rtf, backend, store = cloud
    _lose(backend, store, "web")
    node = store.lookup_instance("web").node
    store.update_instance(store.lookup_instance("web").uuid, node=node + "-gone")
    code, (action,), _ = _heal(rtf)
    assert (code, action["Done"]) == (3, False)
    assert action["Detail"].startswith("cannot heal on h1/")


def test_audit_exits_3_on_findings_and_4_after_removing_them(cloud):
    rtf, backend, store = cloud
    h2 = store.node_root_uuid("h2", "h2")
    stranger = "0b1e5c3e-8d7a-4c29-9d7e-2f1c9a0e4b11"
    backend.put_allocations(stranger, {h2: {"VCPU": 1}}, project_id="p", user_id="u",
                            consumer_generation=None)
    code, out, _ = rtf("audit", "--recheck-delay", "0", "-f", "json")
    assert (code, [f["Consumer"] for f in json.loads(out)]) == (3, [stranger])
    code, out, _ = rtf("check", "--recheck-delay", "0", "-f", "json")
    assert code == 3
    # Only what concerns the provider named: h1 has nothing wrong.
    code, out, _ = rtf("audit", "--recheck-delay", "0", "--resource-provider", "h1",
                       "--delete", "-f", "json")
    assert (code, json.loads(out)) == (0, [])
    assert backend.get_consumer_allocations(stranger).allocations
    code, out, _ = rtf("audit", "--recheck-delay", "0", "--resource-provider", "h2",
                       "--delete", "-f", "json")
    assert (code, [(r["Consumer"], r["Done"]) for r in json.loads(out)]) == (
        4, [(stranger, True)])
    assert backend.get_consumer_allocations(stranger).allocations == {}
    assert rtf("audit", "--recheck-delay", "0", "--delete")[:2] == (0, "no findings\n")
    assert rtf("audit", "--resource-provider", "nowhere")[0] == 2


def test_a_missing_database_driver_names_the_extra_that_installs_it(rtf, ini):
    ini.write_text(ini.read_text() + "[database]\nconnection = mysql+mysqldb://root@127.0.0.1/x\n")
    code, _, err = rtf("instances", "list")
    assert code == 2
    assert "No module named 'MySQLdb'" in err
    assert "pip install 'rtframework[mysql]'" in err and "mysql+pymysql://" in err
