"""The drivers' option groups, as oslo-config-generator sees them."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize(("namespace", "group", "options"), [
    ("rtframework.libvirt", "[libvirt]",
     ("connection_uri", "virt_type", "cpu_shared_set", "cpu_dedicated_set", "node_name",
      "instances_path")),
    ("rtframework.baremetal", "[baremetal]", ("nodes_file", "state_file")),
])
def test_generator_documents_every_driver_option(namespace, group, options):
    out = subprocess.run(
        [sys.executable, "-m", "oslo_config.generator", "--namespace", namespace],
        check=True, capture_output=True, text=True).stdout
    assert group in out
    for option in options:
        assert f"#{option} = " in out, f"{option} missing from the {group} sample"


@pytest.mark.parametrize(("driver_path", "group", "option", "value"), [
    ("rtframework_drivers.libvirt.driver:LibvirtDriver", "libvirt", "node_name", "n1"),
    ("rtframework_drivers.baremetal.driver:BaremetalDriver", "baremetal", "nodes_file", "/x.json"),
])
def test_two_configurations_do_not_share_overrides(driver_path, group, option, value):
    """Hosts in one process (tests, demos) each read their own configuration."""
    import importlib

    from rtframework import conf as rtconf

    module, cls = driver_path.split(":")
    driver_cls = getattr(importlib.import_module(module), cls)
    first, second = rtconf.new_conf(), rtconf.new_conf()
    for c in (first, second):
        driver_cls.register_opts(c)
        c([], default_config_files=[])
    first.set_override(option, value, group)
    assert first[group][option] == value
    assert second[group][option] is None
