"""The instance and compute commands, end to end through ``rtf``."""

from __future__ import annotations

import json
import logging
import signal
import subprocess
import sys
import time

import pytest
import sqlalchemy as sa

from rtframework.cmd.main import main


@pytest.fixture
def rtf(tmp_path, database_url, capsys):
    """rtf(*args) -> (exit code, stdout, stderr) with a config on the test database."""
    ini = tmp_path / "rtf.conf"
    ini.write_text(
        f"[DEFAULT]\nstate_path = {tmp_path}\nhost = h1\n"
        "[database]\n" f"connection = {database_url}\n"
        "[placement_database]\n" f"connection = {database_url}\n"
        "[fake_driver]\nvcpus = 4\nmemory_mb = 4096\ndisk_gb = 40\n")

    def run(*args):
        # Each cliff run adds its console handler to the root logger; a real
        # process runs once, so start from none and put the others back.
        root = logging.getLogger()
        handlers = list(root.handlers)
        root.handlers[:] = []
        try:
            code = main(["--config-file", str(ini), *args])
        finally:
            root.handlers[:] = handlers
        out, err = capsys.readouterr()
        return code, out, err

    return run


def _json(rtf, *args):
    code, out, err = rtf(*args, "-f", "json")
    assert code == 0, err
    return json.loads(out)


def test_boot_list_shelve_unshelve_delete(rtf):
    assert _json(rtf, "compute", "update")[0]["Node"] == "h1"
    booted = _json(rtf, "boot", "web", "--flavor-vcpus", "2", "--flavor-memory-mb", "512")
    assert booted["VM state"] == "ACTIVE" and booted["Host"] == "h1"
    listed = _json(rtf, "instances", "list")
    assert [(i["Name"], i["Resources"]) for i in listed] == [("web", {"MEMORY_MB": 512, "VCPU": 2})]
    assert _json(rtf, "shelve-offload", "web")["VM state"] == "SHELVED_OFFLOADED"
    assert _json(rtf, "unshelve", "web")["Host"] == "h1"
    assert _json(rtf, "delete", "web")["VM state"] == "DELETED"
    assert _json(rtf, "instances", "list") == []
    assert [i["Name"] for i in _json(rtf, "instances", "list", "--all")] == ["web"]


def test_compute_nodes_list_and_second_update_is_quiet(rtf):
    _json(rtf, "compute", "update", "--host", "h2")
    (second,) = _json(rtf, "compute", "update", "--host", "h2")
    assert second["Created"] == second["Updated"] == []
    nodes = _json(rtf, "compute-nodes", "list")
    assert [(n["Host"], n["Driver"], n["State"]) for n in nodes] == [("h2", "fake", "up")]


def test_compute_run_once(rtf):
    code, _, err = rtf("compute", "run", "--once")
    assert code == 0, err
    assert [n["Host"] for n in _json(rtf, "compute-nodes", "list")] == ["h1"]


# A refused boot is 1, a usage error (bad argument, unknown name) 2.
@pytest.mark.parametrize("args,status,message", [
    (["boot", "x"], 2, "give the flavor"),
    (["boot", "x", "--resources", "VCPU"], 2, "--resources wants CLASS=AMOUNT"),
    (["boot", "x", "--resources", "VCPUS=1"], 2, "invalid resource class 'VCPUS'"),
    (["boot", "x", "--flavor-vcpus", "5"], 1, "VCPU=5 exceeds max_unit 4"),
    (["boot", "x", "--flavor-vcpus", "1", "--host", "h9"], 1, "not in placement yet"),
    (["boot", "x", "--flavor-vcpus", "1", "--node", "n7"], 2, "has no node 'n7'"),
    (["delete", "ghost"], 2, "no instance with uuid or name 'ghost'"),
    (["unshelve", "ghost"], 2, "no instance with uuid or name 'ghost'"),
])
def test_bad_input_is_one_clear_line_and_changes_nothing(rtf, args, status, message):
    rtf("compute", "update")
    code, out, err = rtf(*args)
    assert code == status, err
    assert message in err
    assert len(err.strip().splitlines()) == 1, err
    assert _json(rtf, "instances", "list", "--all") == []


def test_unknown_driver_lists_installed_ones(rtf, tmp_path):
    ini = tmp_path / "rtf.conf"
    ini.write_text(ini.read_text().replace("host = h1\n", "host = h1\ncompute_driver = xen\n"))
    code, _, err = rtf("compute", "update")
    assert code == 2, err
    assert "unknown compute driver 'xen'; installed: " in err and "fake" in err


def test_compute_run_reports_until_sigterm(rtf, tmp_path, database_url):
    ini = tmp_path / "rtf.conf"
    ini.write_text(ini.read_text().replace("host = h1\n",
                                           "host = h1\nupdate_resources_interval = 1\n"))
    agent = subprocess.Popen(
        [sys.executable, "-m", "rtframework.cmd.main", "--config-file", str(ini), "compute", "run"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    engine = sa.create_engine(database_url)
    try:
        deadline = time.monotonic() + 60
        reported = False
        while not reported and time.monotonic() < deadline and agent.poll() is None:
            try:
                with engine.connect() as conn:
                    reported = bool(conn.execute(
                        sa.text("SELECT count(*) FROM compute_nodes")).scalar())
            except sa.exc.DBAPIError:
                pass  # schema not there yet
            if not reported:
                time.sleep(0.2)
        assert agent.poll() is None, agent.stderr.read()
        # Running out of time is a failure, not a pass.
        assert reported, "the agent reported no compute node within 60 s"
        agent.send_signal(signal.SIGTERM)
        _, err = agent.communicate(timeout=60)
    finally:
        engine.dispose()
        if agent.poll() is None:
            agent.kill()
    assert agent.returncode == 0, err
    assert "compute agent of host h1 stopped" in err


def test_boot_with_a_device_class(rtf, tmp_path):
    # `--resources VCPU=2,CUSTOM_FPGA=1`: refused on the
    # default fake node (nothing offers the class), and booted once the
    # fake driver reports a device child.
    assert rtf("compute", "update")[0] == 0
    code, _, err = rtf("boot", "web", "--resources", "VCPU=2,CUSTOM_FPGA=1")
    assert code == 1
    assert "no provider of the tree offers CUSTOM_FPGA" in err
    with open(tmp_path / "rtf.conf", "a") as ini:
        ini.write("child_resource_class = CUSTOM_FPGA\nchild_total = 1\n")
    assert rtf("compute", "update")[0] == 0
    booted = _json(rtf, "boot", "web", "--resources", "VCPU=2,CUSTOM_FPGA=1")
    assert booted["Resources"] == {"CUSTOM_FPGA": 1, "VCPU": 2}
    code, _, err = rtf("boot", "web2", "--resources", "VCPU=2,CUSTOM_FPGA=1")
    assert code == 1
    assert "h1_CUSTOM_FPGA is full for CUSTOM_FPGA=1: 0 free of 1" in err


def test_compute_reconcile_settles_a_killed_boot(rtf, database_url):
    assert _json(rtf, "compute", "update")[0]["Node"] == "h1"
    booted = _json(rtf, "boot", "web", "--flavor-vcpus", "2", "--flavor-memory-mb", "512")
    code, out, _ = rtf("compute", "reconcile")
    assert (code, out.strip()) == (0, "host h1: nothing to reconcile")
    # What a boot killed after its claim leaves: BUILDING, holding its flavor.
    engine = sa.create_engine(database_url)
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE instances SET vm_state = 'BUILDING' WHERE uuid = :u"),
                     {"u": booted["UUID"]})
    engine.dispose()
    (row,) = _json(rtf, "compute", "reconcile")
    assert (row["Instance"], row["Was"], row["Now"], row["Action"]) == (
        booted["UUID"], "BUILDING/-", "ERROR/-", "error")
    (listed,) = _json(rtf, "instances", "list")
    assert listed["VM state"] == "ERROR"
    assert _json(rtf, "compute", "update")[0]["Node"] == "h1"
    code, out, _ = rtf("check", "--recheck-delay", "-1")
    assert code == 0, out
