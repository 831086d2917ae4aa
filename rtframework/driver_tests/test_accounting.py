"""Contract: the driver reports what the host has; reserved host amounts
and allocation ratios are the framework's to apply."""

from __future__ import annotations

import pytest

from rtframework.driver_tests.harness import fill_trees

pytestmark = pytest.mark.driver

# Every [DEFAULT] option of the framework's share, away from its default.
FRAMEWORK_SHARE = {
    "reserved_host_cpus": 1,
    "reserved_host_memory_mb": 1536,
    "reserved_host_disk_mb": 5120,
    "cpu_allocation_ratio": 3.0,
    "ram_allocation_ratio": 1.5,
    "disk_allocation_ratio": 2.0,
    "initial_cpu_allocation_ratio": 8.0,
    "initial_ram_allocation_ratio": 1.25,
    "initial_disk_allocation_ratio": 1.75,
}

# Classes the framework reserves host amounts of.
HOST_RESERVED = ("VCPU", "MEMORY_MB", "DISK_GB")


def test_the_framework_options_do_not_change_the_report(rtf_driver_harness, rtf_driver):
    plain = fill_trees(rtf_driver)
    shared = fill_trees(rtf_driver_harness.restart(rtf_driver, **FRAMEWORK_SHARE))
    # Applied by the driver, they would be applied twice.
    assert shared == plain


def test_no_overcommit_and_no_host_reservation_are_reported(rtf_driver):
    for nodename, tree in fill_trees(rtf_driver).items():
        for provider in tree.values():
            for rc, inv in provider.inventory.items():
                where = f"node {nodename!r}, provider {provider.name!r}, {rc}"
                assert inv.allocation_ratio == 1.0, (
                    f"{where}: allocation_ratio {inv.allocation_ratio}; overcommit is the "
                    "framework's ([DEFAULT] *_allocation_ratio)")
                if rc in HOST_RESERVED:
                    assert inv.reserved == 0, (
                        f"{where}: reserved {inv.reserved}; the host's share is the "
                        "framework's ([DEFAULT] reserved_host_*)")


def test_running_instances_do_not_change_the_report(rtf_driver, rtf_instance):
    # Totals are what the host has; what instances use is placement's to
    # count. A driver reporting what is free would count it twice.
    before = fill_trees(rtf_driver)
    instance = rtf_instance()
    rtf_driver.spawn(instance)
    assert fill_trees(rtf_driver) == before, "the report changed when an instance started"
    rtf_driver.destroy(instance)
    assert fill_trees(rtf_driver) == before, "the report changed when an instance stopped"
