"""``rtf migrate|resize|live-migrate|evacuate|confirm|revert|migrations list``."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from rtframework import conf as rtconf
from rtframework.cmd.main import main
from rtframework.compute.store import ComputeStore
from rtframework.moves import context, migrate
from rtframework.placement.backend import load_backend


@pytest.fixture
def cli(tmp_path, database_url, monkeypatch):
    path = tmp_path / "rtf.conf"
    path.write_text(
        f"[DEFAULT]\nstate_path = {tmp_path}\nreserved_host_memory_mb = 0\n"
        f"[database]\nconnection = {database_url}\n"
        f"[placement_database]\nconnection = {database_url}\n"
        "[placement]\nmove_claim_strategy = migration\n"
    )
    monkeypatch.setenv("RTF_CONFIG_FILE", str(path))
    for host in ("a", "b"):
        assert main(["compute", "update", "--host", host]) == 0
    assert main(["boot", "vm", "--host", "a", "--resources", "VCPU=1,MEMORY_MB=512,DISK_GB=5"]) == 0
    return path


def run_json(capsys, *argv):
    capsys.readouterr()
    assert main([*argv, "-f", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def rtf(*argv):
    # A process of its own: cliff adds a log handler per App to the root logger.
    return subprocess.run([sys.executable, "-m", "rtframework.cmd.main", *argv],
                          capture_output=True, text=True, timeout=60)


def usage(capsys, host):
    rows = run_json(capsys, "providers", "list")
    [rp] = [r["UUID"] for r in rows if r["Name"] == host]
    return {r["Resource class"]: r["Used"] for r in run_json(capsys, "usages", rp) if r["Used"]}


def test_migrate_confirm_twice_then_revert_is_refused(cli, capsys):
    mig = run_json(capsys, "migrate", "vm", "--to", "b")
    assert (mig["Status"], mig["Dest host"], mig["Claim strategy"]) == ("finished", "b",
                                                                         "migration")
    assert usage(capsys, "a") == usage(capsys, "b") == {"VCPU": 1, "MEMORY_MB": 512,
                                                        "DISK_GB": 5}
    assert run_json(capsys, "confirm", mig["UUID"])["Status"] == "confirmed"
    assert run_json(capsys, "confirm", mig["UUID"])["Status"] == "confirmed"
    assert usage(capsys, "a") == {}
    done = rtf("revert", mig["UUID"])
    assert done.returncode == 1  # a refused move
    assert done.stderr.strip().splitlines() == [
        f"migration {mig['UUID']} is confirmed; it cannot be reverted"]
    assert usage(capsys, "a") == {}
    listed = run_json(capsys, "migrations", "list", "--instance", "vm")
    assert [(m["UUID"], m["Status"]) for m in listed] == [(mig["UUID"], "confirmed")]


def test_same_host_resize_then_revert(cli, capsys):
    mig = run_json(capsys, "resize", "vm", "--flavor", "VCPU=2,MEMORY_MB=1024,DISK_GB=10",
                   "--to", "a")
    assert (mig["Source host"], mig["Dest host"], mig["Type"]) == ("a", "a", "resize")
    # M holds the old flavor and I the new one, both on a.
    assert usage(capsys, "a") == {"VCPU": 3, "MEMORY_MB": 1536, "DISK_GB": 15}
    assert run_json(capsys, "revert", mig["UUID"])["Status"] == "reverted"
    assert usage(capsys, "a") == {"VCPU": 1, "MEMORY_MB": 512, "DISK_GB": 5}
    assert run_json(capsys, "migrations", "list", "--unfinished") == []


def test_live_migrate_abort_leaves_the_source(cli, capsys):
    mig = run_json(capsys, "live-migrate", "vm", "--abort")
    assert (mig["Status"], mig["Dest host"]) == ("cancelled", "b")
    assert usage(capsys, "b") == {}
    assert run_json(capsys, "live-migrate", "vm")["Status"] == "done"
    assert usage(capsys, "a") == {}


@pytest.mark.parametrize("argv, status, message", [
    # A refused move is 1, a usage error (bad argument, unknown name) 2.
    (["migrate", "vm", "--to", "a"], 1, "is on host 'a' already"),
    (["migrate", "ghost"], 2, "no instance with uuid or name 'ghost'"),
    (["resize", "vm", "--flavor", "VCPU=two"], 2, "--flavor wants CLASS=AMOUNT"),
    (["evacuate", "vm"], 1, "is up; only instances of a host that is down"),
    (["confirm", "00000000-0000-0000-0000-000000000000"], 2, "not found"),
])
def test_bad_input_is_one_line_non_zero_and_changes_nothing(cli, capsys, argv, status,
                                                            message):
    done = rtf(*argv)
    assert done.returncode == status, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], done.stderr
    assert run_json(capsys, "migrations", "list") == []
    assert usage(capsys, "a") == {"VCPU": 1, "MEMORY_MB": 512, "DISK_GB": 5}


def test_compute_run_finishes_what_a_stop_interrupted(cli, capsys):
    conf = rtconf.load([str(cli)])
    store, backend = ComputeStore.from_conf(conf), load_backend(conf)
    try:
        # A cold migration whose process died after claiming the destination.
        migrate.start(context.MoveContext(conf, backend, store), "vm", to_host="b")
    finally:
        store.close()
        backend.close()
    assert usage(capsys, "b") == {"VCPU": 1, "MEMORY_MB": 512, "DISK_GB": 5}
    assert main(["compute", "run", "--once", "--host", "b"]) == 0
    assert usage(capsys, "b") == {}
    [mig] = run_json(capsys, "migrations", "list")
    assert mig["Status"] == "error"
    assert usage(capsys, "a") == {"VCPU": 1, "MEMORY_MB": 512, "DISK_GB": 5}
