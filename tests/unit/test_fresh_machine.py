"""What a new user meets first: no configuration, relative paths in the
shipped configs, optional packages missing, no command given."""

from __future__ import annotations

import configparser
import logging
import pathlib
import sys

import pytest

from rtframework import conf as rtconf
from rtframework import db
from rtframework.cmd.main import main

ROOT = pathlib.Path(__file__).resolve().parents[2]


def run(*args):
    root = logging.getLogger()
    handlers = list(root.handlers)
    root.handlers[:] = []
    try:
        return main(list(args))
    finally:
        root.handlers[:] = handlers


def test_relative_state_path_is_taken_from_the_config_files_directory(tmp_path, monkeypatch):
    (tmp_path / "etc").mkdir()
    ini = tmp_path / "etc" / "rtf.conf"
    ini.write_text("[DEFAULT]\nstate_path = ../state\n")
    monkeypatch.chdir("/")
    conf = rtconf.load([str(ini)])
    assert pathlib.Path(conf.state_path).resolve() == tmp_path / "state"
    assert db.connection_url(conf, "database").endswith(f"{tmp_path}/etc/../state/compute.sqlite")
    assert (tmp_path / "state").is_dir()


def test_default_state_path_that_does_not_exist_is_refused_not_created(tmp_path):
    conf = rtconf.new_conf()
    missing = tmp_path / "var-lib-rtframework"
    conf.set_default("state_path", str(missing))
    conf([], project="rtframework", default_config_files=[])
    with pytest.raises(rtconf.ConfigError, match=r"state_path is its default .* does not exist"
                       r".*--config-file"):
        db.connection_url(conf, "database")
    assert not missing.exists()


def test_without_any_config_a_database_command_exits_2_and_creates_nothing(
        tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("RTF_CONFIG_FILE", raising=False)
    monkeypatch.setattr(rtconf, "DEFAULT_CONFIG_FILE", str(tmp_path / "absent.conf"))
    if pathlib.Path("/var/lib/rtframework").exists():
        pytest.skip("/var/lib/rtframework exists on this machine (a packaged install)")
    assert run("instances", "list") == 2
    assert "state_path is its default /var/lib/rtframework" in capsys.readouterr().err
    assert not pathlib.Path("/var/lib/rtframework").exists()


def test_plot_without_matplotlib_fails_before_the_run_naming_the_extra(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    assert run("simulate", "--hosts", "1", "--operations", "100000", "--plot", "x.png") == 2
    err = capsys.readouterr().err
    assert "--plot and --report need matplotlib" in err and "'.[plot]'" in err
    assert not pathlib.Path("x.png").exists()


def test_no_command_prints_help_instead_of_a_shell(tmp_path, capsys, monkeypatch):
    ini = tmp_path / "rtf.conf"
    ini.write_text("[DEFAULT]\n")
    monkeypatch.setattr(sys, "stdin", None)  # a shell would read it
    assert run("--config-file", str(ini)) == 2
    out = capsys.readouterr().out
    assert "usage: rtf" in out and "exit status:" in out and "instances list" in out


def test_default_tox_envs_do_not_force_the_libvirt_binding_and_ci_adds_it():
    tox = configparser.ConfigParser(interpolation=None)
    tox.read(ROOT / "tox.ini")
    extras = tox["testenv"]["extras"].split()
    assert "libvirt" not in extras and "{env:RTF_TOX_EXTRAS:}" in extras
    assert "export RTF_TOX_EXTRAS=libvirt" in (ROOT / ".ci" / "run").read_text()


def test_database_driver_extras_exist():
    setup = configparser.ConfigParser()
    setup.read(ROOT / "setup.cfg")
    extras = setup["options.extras_require"]
    assert "psycopg2-binary" in extras["postgresql"]
    assert "PyMySQL" in extras["mysql"]
    assert "matplotlib" in extras["plot"]


def test_the_shipped_libvirt_config_creates_no_default_state_path(tmp_path, monkeypatch):
    """Its instances_path is $state_path/instances: with state_path at a
    default that does not exist, the driver refuses as the databases do."""
    pytest.importorskip("libvirt")
    from rtframework.driver import load_driver

    missing = tmp_path / "var-lib-rtframework"
    conf = rtconf.new_conf()
    conf.set_default("state_path", str(missing))
    conf(["--config-file", str(ROOT / "etc" / "rtframework" / "libvirt.conf")],
         project="rtframework", default_config_files=[])
    driver = load_driver(conf, "h1")
    with pytest.raises(rtconf.ConfigError, match=r"state_path is its default .* does not exist"
                       r", and \[libvirt\] instances_path .*/instances would be under it"):
        driver.init_host()
    assert not missing.exists()
    conf.set_override("state_path", str(missing))  # chosen: made
    load_driver(conf, "h1").init_host()
    assert (missing / "instances").is_dir()
