"""``rtf demo`` on a fresh machine: embedded SQLite in a new directory."""

from __future__ import annotations

import logging
import tempfile

import pytest

from rtframework.cmd.main import main


@pytest.mark.sqlite_only
def test_demo_runs_in_a_fresh_directory_and_tells_the_story(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.delenv("RTF_CONFIG_FILE", raising=False)
    monkeypatch.chdir(tmp_path)
    handlers = list(logging.getLogger().handlers)
    logging.getLogger().handlers[:] = []
    try:
        assert main(["demo"]) == 0
    finally:
        logging.getLogger().handlers[:] = handlers
    out = capsys.readouterr().out
    # The temporary directory is gone; --state-path keeps one (below).
    assert [p for p in tmp_path.iterdir() if p.name.startswith("rtf-demo-")] == []
    assert "removed; rtf demo --state-path DIR keeps the databases" in out
    assert "booted ml-1 (fpga" in out
    assert "refused: node host-c of host host-c cannot hold" in out
    assert "nothing to do (1 placement reads, 0 writes)" in out
    assert "host-a periodic: healed db-1" in out
    assert "unknown_consumer" in out
    # The operator's removal says what it removed, and how.
    removal = out[out.index("an operator removes it:"):].splitlines()[1]
    assert removal.startswith("  rtf allocations delete ") and \
        removal.endswith(": removed VCPU=1 on host-b")
    # Evacuation: both hosts hold batch-1 while host-c is down, and the
    # up hosts' periodic runs keep it; host-c removes its half on return.
    evacuation = out[out.index("host-c goes down"):]
    assert "  still   host-c: DISK_GB=60, MEMORY_MB=8192, VCPU=8" in evacuation
    assert "host-c periodic" not in evacuation[:evacuation.index("host-c is back")]
    assert "  after   host-c: DISK_GB=20, MEMORY_MB=4096, VCPU=4" in evacuation
    # Final usages: web-1 on host-a, batch-1 evacuated to host-b, ml-1 on
    # host-c, FPGA taken.
    rows = {tuple(c.strip() for c in line.strip("|").split("|"))
            for line in out.splitlines() if line.startswith("| host-")}
    assert ("host-a", "host-a", "VCPU", "2", "32") in rows
    assert ("host-b", "host-b", "VCPU", "4", "32") in rows
    assert ("host-c", "host-c", "VCPU", "4", "32") in rows
    assert ("host-c", "host-c_CUSTOM_FPGA", "CUSTOM_FPGA", "1", "1") in rows
    # Nested hosts on a shared pool: the move holds children and the pool
    # once, a resize the larger disk once, and the refusal names the pool.
    nested = out[out.index("Nested hosts on a shared storage pool"):]
    assert "  render-1: gpu-a_GPU0     VGPU=1" in nested
    assert "  migration: gpu-a_NUMA0    MEMORY_MB=2048" in nested
    assert "  storage-pool holds DISK_GB=20: the disk does not move" in nested
    assert "storage-pool holds DISK_GB=60 (the larger disk, once" in nested
    assert "reverted: storage-pool holds DISK_GB=20 again" in nested
    # The pool holds the 20 GB disk already: the resize to 120 needs 100 more.
    assert "storage-pool is full for DISK_GB=100: 80 free of 100" in nested
    assert "| (shared) | storage-pool       | DISK_GB     | 20   | 100      |" in out


@pytest.mark.sqlite_only
def test_demo_with_a_state_path_keeps_it_to_look_around(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("RTF_CONFIG_FILE", raising=False)
    state = tmp_path / "kept"
    monkeypatch.setattr("rtframework.demo.STEPS", [])
    handlers = list(logging.getLogger().handlers)
    logging.getLogger().handlers[:] = []
    try:
        assert main(["demo", "--state-path", str(state)]) == 0
        capsys.readouterr()
        assert main(["--config-file", str(state / "demo.conf"), "instances", "list"]) == 0
    finally:
        logging.getLogger().handlers[:] = handlers
    assert (state / "compute.sqlite").exists() and (state / "placement.sqlite").exists()
