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
    (state,) = [p for p in tmp_path.iterdir() if p.name.startswith("rtf-demo-")]
    assert (state / "compute.sqlite").exists() and (state / "placement.sqlite").exists()
    assert "booted ml-1 (fpga" in out
    assert "refused: node host-c of host host-c cannot hold" in out
    assert "nothing to do (1 placement reads, 0 writes)" in out
    assert "host-a periodic: healed db-1" in out
    assert "unknown_consumer" in out
    # Final usages: web-1 on host-a, ml-1 and batch-1 on host-c, FPGA taken.
    rows = {tuple(c.strip() for c in line.strip("|").split("|"))
            for line in out.splitlines() if line.startswith("| host-")}
    assert ("host-a", "host-a", "VCPU", "2", "32") in rows
    assert ("host-b", "host-b", "VCPU", "0", "32") in rows
    assert ("host-c", "host-c", "VCPU", "8", "32") in rows
    assert ("host-c", "host-c_CUSTOM_FPGA", "CUSTOM_FPGA", "1", "1") in rows
