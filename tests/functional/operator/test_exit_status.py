"""One exit status rule for every command: 0 done and clean, 1 a failed
step or findings, 2 a usage or configuration error."""

from __future__ import annotations

import json

import pytest

from rtframework import conf as rtconf
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
    assert report["Errors"].startswith("h3: ")
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
