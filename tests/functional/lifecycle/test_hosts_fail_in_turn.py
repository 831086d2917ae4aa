"""Two hosts that fail one after the other (issue 20), as an operator runs it.

h1 goes down, its instance is evacuated to h2; then h2 goes down too.
Evacuating back to h1 must be refused while h1 is down (and has not
cleaned up after the first evacuation); once both hosts are back,
``rtf check`` finds nothing and the instance lives, and is held, on h2.
"""

from __future__ import annotations

import datetime
import json
import subprocess
import sys

import pytest

from rtframework import conf as rtconf
from rtframework.cmd.main import main
from rtframework.compute.store import ComputeStore

DOWN_TIME = 60


def rtf(*argv: str) -> subprocess.CompletedProcess:
    # A process of its own, as an operator's command is.
    return subprocess.run([sys.executable, "-m", "rtframework.cmd.main", *argv],
                          capture_output=True, text=True, timeout=120)


@pytest.fixture
def operator(tmp_path, database_url, monkeypatch):
    path = tmp_path / "rtf.conf"
    path.write_text(
        f"[DEFAULT]\nstate_path = {tmp_path}\nreserved_host_memory_mb = 0\n"
        f"service_down_time = {DOWN_TIME}\n"
        f"[database]\nconnection = {database_url}\n"
        f"[placement_database]\nconnection = {database_url}\n"
    )
    monkeypatch.setenv("RTF_CONFIG_FILE", str(path))
    for host in ("h1", "h2"):
        assert main(["compute", "update", "--host", host]) == 0
    assert main(["boot", "vm1", "--host", "h1",
                 "--resources", "VCPU=1,MEMORY_MB=512,DISK_GB=5"]) == 0
    conf = rtconf.load([str(path)])
    store = ComputeStore.from_conf(conf)
    yield store
    store.close()


def stops_reporting(store: ComputeStore, host: str) -> None:
    """The host's last heartbeat is older than service_down_time."""
    long_ago = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(
        seconds=10 * DOWN_TIME)
    store.heartbeat(host, at=long_ago)


def held_on(capsys, instance: str) -> set[str]:
    capsys.readouterr()
    assert main(["allocations", "show", instance, "-f", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    capsys.readouterr()
    assert main(["providers", "list", "-f", "json"]) == 0
    names = {p["UUID"]: p["Name"] for p in json.loads(capsys.readouterr().out)}
    return {names[r["Provider"]] for r in rows}


def test_second_evacuation_to_a_down_host_is_refused_and_check_is_clean(operator, capsys):
    store = operator
    vm = store.lookup_instance("vm1")
    stops_reporting(store, "h1")
    first = rtf("evacuate", "vm1", "--to", "h2")
    assert first.returncode == 0, first.stderr
    assert store.get_instance(vm.uuid).host == "h2"

    stops_reporting(store, "h2")
    before = (store.get_instance(vm.uuid), store.list_migrations(instance_uuid=vm.uuid))
    second = rtf("evacuate", "vm1", "--to", "h1")
    assert second.returncode != 0
    [line] = second.stderr.strip().splitlines()
    assert "h1" in line and "down" in line, line
    assert (store.get_instance(vm.uuid), store.list_migrations(instance_uuid=vm.uuid)) == before

    for host in ("h1", "h2"):
        restarted = rtf("compute", "run", "--once", "--host", host)
        assert restarted.returncode == 0, restarted.stderr
    checked = rtf("check", "--recheck-delay", "-1")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert store.get_instance(vm.uuid).host == "h2"
    assert held_on(capsys, vm.uuid) == {"h2"}
    assert [m.status for m in store.list_migrations(instance_uuid=vm.uuid)] == ["done"]
