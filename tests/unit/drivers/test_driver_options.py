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
