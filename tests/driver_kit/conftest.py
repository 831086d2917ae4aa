"""The configuration the driver conformance kit runs the bundled drivers
and the example third-party driver with (``tox -e driver-kit``)::

    pytest --rtf-driver NAME tests/driver_kit

Each driver is given a shape that exercises the contract: the fake driver
two nodes with NUMA, GPU and device children, libvirt the in-process test
hypervisor, bare metal a catalogue with free, reserved and broken nodes.
"""

from __future__ import annotations

import pathlib

import pytest

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures"

OPTIONS = {
    "fake": {"fake_driver": {"nodes": ["kit-node-a", "kit-node-b"],
                             "numa_nodes": 2, "pcpus": 8, "gpus": 2,
                             "child_resource_class": "CUSTOM_FPGA", "child_count": 2}},
    # One test hypervisor per process, shared by every connection: its
    # guests outlive a restart of the driver, as a real hypervisor's do.
    "libvirt": {"libvirt": {"connection_uri": "test:///default"}},
    "baremetal": {"baremetal": {"nodes_file": str(FIXTURES / "baremetal" / "nodes.yaml")}},
}

# Contract tests a bundled driver is known to fail, with the reason.
KNOWN_FAILURES = {
    ("fake", "test_instances_are_the_same_after_a_restart"):
        "the fake driver keeps its guests in memory; keeping them in a file under "
        "state_path, visible across processes, is under way",
}


def pytest_rtf_driver_configure(conf, state_dir, name):
    for group, values in OPTIONS.get(name, {}).items():
        for option, value in values.items():
            conf.set_override(option, value, group)


def pytest_collection_modifyitems(config, items):
    name = config.getoption("rtf_driver", default=None)
    if name == "libvirt":
        from tests.fixtures.libvirt_binding import require_binding

        try:
            require_binding()
        except pytest.skip.Exception as skip:
            for item in items:
                item.add_marker(pytest.mark.skip(reason=str(skip)))
    for item in items:
        reason = KNOWN_FAILURES.get((name, item.originalname))
        if reason:
            item.add_marker(pytest.mark.xfail(reason=reason, strict=False))
