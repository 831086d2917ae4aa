"""Reserved host resources and allocation ratios on a node's root."""

from __future__ import annotations

from rtframework import accounting
from rtframework.placement.types import Inventory

REPORTED = {"VCPU": Inventory(total=8), "MEMORY_MB": Inventory(total=4096),
            "DISK_GB": Inventory(total=100), "CUSTOM_X": Inventory(total=2)}


def test_reserved_and_initial_ratios_for_new_classes(conf, config):
    config.config(reserved_host_cpus=1, reserved_host_memory_mb=256, reserved_host_disk_mb=1025)
    inv = accounting.root_inventory(conf, REPORTED, {})
    assert [(inv[rc].reserved, inv[rc].allocation_ratio) for rc in ("VCPU", "MEMORY_MB",
                                                                    "DISK_GB")] == [
        (1, 4.0), (256, 1.0), (2, 1.0)]
    assert inv["CUSTOM_X"] == REPORTED["CUSTOM_X"]


def test_unset_ratio_keeps_placement_set_ratio_wins(conf, config):
    placed = {"VCPU": Inventory(total=8, allocation_ratio=16.0)}
    assert accounting.root_inventory(conf, REPORTED, placed)["VCPU"].allocation_ratio == 16.0
    config.config(cpu_allocation_ratio=2.0)
    assert accounting.root_inventory(conf, REPORTED, placed)["VCPU"].allocation_ratio == 2.0


def test_reserved_capped_at_total(conf, config):
    config.config(reserved_host_memory_mb=10_000)
    assert accounting.root_inventory(conf, REPORTED, {})["MEMORY_MB"].reserved == 4096
