"""The operator CLI over the sql backend: ``rtf db sync``, providers,
inventory, allocations, usages, classes and traits."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid

import pytest

from rtframework import conf as rtconf
from rtframework.cmd.main import main
from rtframework.placement import types as t
from rtframework.placement.sql.backend import SQLBackend


@pytest.fixture
def config_file(tmp_path, database_url, monkeypatch):
    path = tmp_path / "rtf.conf"
    path.write_text(
        f"[DEFAULT]\nstate_path = {tmp_path}\n"
        f"[placement_database]\nconnection = {database_url}\n"
    )
    monkeypatch.setenv("RTF_CONFIG_FILE", str(path))
    return str(path)


@pytest.fixture
def seeded(config_file):
    backend = SQLBackend(rtconf.load([config_file]))
    rp = backend.create_provider("host-" + uuid.uuid4().hex[:8])
    backend.set_inventories(rp.uuid, 0, {"VCPU": t.Inventory(8), "MEMORY_MB": t.Inventory(1024)})
    consumer = str(uuid.uuid4())
    backend.put_allocations(consumer, {rp.uuid: {"VCPU": 3}}, project_id="proj",
                            user_id="alice", consumer_generation=None)
    backend.close()
    return rp, consumer


def run_json(capsys, *argv):
    assert main([*argv, "-f", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_db_sync_is_idempotent(config_file, capsys):
    assert main(["db", "sync"]) == 0
    assert main(["db", "sync"]) == 0
    assert "placement database: up to date" in capsys.readouterr().out


def test_providers_inventory_allocations_usages(seeded, capsys):
    rp, consumer = seeded
    listed = run_json(capsys, "providers", "list", "--resource", "VCPU=5")
    assert [row["UUID"] for row in listed] == [rp.uuid]
    assert run_json(capsys, "providers", "list", "--resource", "VCPU=6") == []
    shown = run_json(capsys, "providers", "show", rp.uuid)
    assert (shown["Name"], shown["Generation"]) == (rp.name, 2)
    inventory = {row["Resource class"]: row for row in run_json(capsys, "inventory", "show",
                                                                 rp.uuid)}
    assert (inventory["VCPU"]["Total"], inventory["VCPU"]["Used"]) == (8, 3)
    held = run_json(capsys, "allocations", "show", consumer)
    assert [(r["Provider"], r["Resource class"], r["Amount"]) for r in held] == [
        (rp.uuid, "VCPU", 3)]
    assert run_json(capsys, "usages", rp.uuid) == [
        {"Resource class": "MEMORY_MB", "Used": 0}, {"Resource class": "VCPU", "Used": 3}]
    assert run_json(capsys, "usages", "--project", "proj") == [
        {"Resource class": "VCPU", "Used": 3}]


def test_classes_and_traits(config_file, capsys):
    names = [row["Name"] for row in run_json(capsys, "resource-classes", "list")]
    assert "VCPU" in names
    traits = [row["Name"] for row in run_json(capsys, "traits", "list", "--prefix", "COMPUTE_")]
    assert traits and all(name.startswith("COMPUTE_") for name in traits)


def test_errors_are_one_line_and_non_zero(config_file):
    # A process of its own: cliff adds a log handler per App to the root
    # logger, so in-process runs would see earlier runs' handlers.
    missing = str(uuid.uuid4())
    done = subprocess.run([sys.executable, "-m", "rtframework.cmd.main", "providers", "show",
                           missing], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"no resource provider with uuid or name {missing!r}"]
