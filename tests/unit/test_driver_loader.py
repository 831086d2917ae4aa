"""Choosing a compute driver by name through its entry point."""

from __future__ import annotations

import textwrap

import pytest
from stevedore import extension

from rtframework import driver
from rtframework_drivers.fake.driver import FakeDriver


def _install_plugin(tmp_path, monkeypatch, name: str, module_source: str, target: str) -> None:
    """Make an importable distribution with one rtframework.drivers entry point."""
    dist = tmp_path / f"rtf_test_{name}-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: rtf-test-{name}\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(f"[rtframework.drivers]\n{name} = {target}\n")
    (tmp_path / f"rtf_test_{name}.py").write_text(textwrap.dedent(module_source))
    monkeypatch.syspath_prepend(str(tmp_path))
    # stevedore keeps each namespace's entry points for the whole process.
    monkeypatch.setattr(extension.ExtensionManager, "ENTRY_POINT_CACHE", {})


def test_configured_driver_is_loaded_with_its_options(conf):
    loaded = driver.load_driver(conf, "h1")
    assert isinstance(loaded, FakeDriver)
    assert loaded.host == "h1"
    assert conf.fake_driver.vcpus == 16


def test_unknown_driver_lists_installed_ones(conf, config):
    config.config(compute_driver="xen")
    with pytest.raises(driver.DriverLoadError) as err:
        driver.load_driver(conf, "h1")
    message = str(err.value)
    assert "unknown compute driver 'xen'" in message
    assert "fake" in message and "libvirt" in message


def test_broken_plugin_is_one_clear_error(conf, tmp_path, monkeypatch):
    _install_plugin(tmp_path, monkeypatch, "broken", "import no_such_hypervisor_lib\n",
                    "rtf_test_broken:Driver")
    with pytest.raises(driver.DriverLoadError,
                       match="compute driver 'broken' failed to load: ModuleNotFoundError"):
        driver.load_driver(conf, "h1", name="broken")


def test_plugin_that_is_not_a_compute_driver_is_refused(conf, tmp_path, monkeypatch):
    _install_plugin(tmp_path, monkeypatch, "notadriver", "class Driver:\n    pass\n",
                    "rtf_test_notadriver:Driver")
    with pytest.raises(driver.DriverLoadError, match="'notadriver' is not a ComputeDriver"):
        driver.load_driver(conf, "h1", name="notadriver")


def test_bad_driver_option_fails_at_load_naming_it(conf, tmp_path):
    ini = tmp_path / "rtf.conf"
    ini.write_text("[fake_driver]\nvcpus = -3\n")
    conf([], default_config_files=[str(ini)])
    with pytest.raises(Exception, match=r"\[fake_driver\] vcpus"):
        driver.load_driver(conf, "h1")
