"""A third-party driver is an installed distribution with an entry point,
nothing more: no change to rtframework, found and used like a bundled one."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

FIXTURE = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "thirdparty" / "acme_hv.py"


@pytest.fixture
def site_dir(tmp_path):
    """A directory laid out like site-packages holding the acme-hv distribution."""
    site = tmp_path / "site"
    site.mkdir()
    shutil.copy(FIXTURE, site / "acme_hv.py")
    dist_info = site / "acme_hv-1.0.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-hv\nVersion: 1.0\n")
    (dist_info / "entry_points.txt").write_text(
        "[rtframework.drivers]\nacme = acme_hv:AcmeDriver\n")
    return site


def _rtf(site, ini, *args):
    path = os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])
    env = dict(os.environ, PYTHONPATH=path)
    return subprocess.run([sys.executable, "-m", "rtframework.cmd.main", "--config-file", str(ini),
                           *args], capture_output=True, text=True, env=env, timeout=120)


def test_installed_third_party_driver_is_listed_and_reports(tmp_path, site_dir, database_url):
    ini = tmp_path / "rtf.conf"
    ini.write_text(
        f"[DEFAULT]\nstate_path = {tmp_path}\nhost = edge1\ncompute_driver = acme\n"
        "reserved_host_memory_mb = 1024\n"
        f"[database]\nconnection = {database_url}\n"
        f"[placement_database]\nconnection = {database_url}\n")

    listed = _rtf(site_dir, ini, "drivers", "list", "-f", "json")
    assert listed.returncode == 0, listed.stderr
    acme = [d for d in json.loads(listed.stdout) if d["Name"] == "acme"]
    assert acme and acme[0]["Distribution"] == "acme-hv"

    updated = _rtf(site_dir, ini, "compute", "update", "-f", "json")
    assert updated.returncode == 0, updated.stderr
    node = json.loads(updated.stdout)[0]
    assert node["Node"] == "edge1-acme"

    shown = _rtf(site_dir, ini, "inventory", "show", node["UUID"], "-f", "json")
    assert shown.returncode == 0, shown.stderr
    inventory = {row["Resource class"]: row for row in json.loads(shown.stdout)}
    assert set(inventory) == {"VCPU", "MEMORY_MB", "CUSTOM_ACME_ACCEL"}
    # The framework's reserved memory applies to a third-party driver too.
    assert inventory["MEMORY_MB"]["Reserved"] == 1024
    assert inventory["CUSTOM_ACME_ACCEL"]["Total"] == 2


def test_unknown_driver_names_the_installed_ones(tmp_path, site_dir, database_url):
    ini = tmp_path / "rtf.conf"
    ini.write_text(
        f"[DEFAULT]\nstate_path = {tmp_path}\nhost = edge1\ncompute_driver = acmee\n"
        f"[database]\nconnection = {database_url}\n"
        f"[placement_database]\nconnection = {database_url}\n")
    result = _rtf(site_dir, ini, "compute", "update")
    assert result.returncode == 2, result.stderr  # a configuration error
    assert "unknown compute driver 'acmee'" in result.stderr
    assert "acme" in result.stderr and "fake" in result.stderr and "libvirt" in result.stderr
