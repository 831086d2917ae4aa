"""The framework's share of an inventory: reserved host resources and
allocation ratios of every provider of a node's tree.

Drivers report totals; how much of that the host keeps for itself and how
far it may be overcommitted is the operator's choice, applied here the same
way for every driver and every provider a driver reports (a NUMA child's
MEMORY_MB is overcommitted like a root's). The host's reservation of a
class is taken once per node: from the providers reporting the class,
parents first, each up to its total.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping

from oslo_config import cfg

from rtframework.placement.types import Inventory

# resource class -> (ratio option, initial ratio option)
RATIO_OPTIONS: Mapping[str, tuple[str, str]] = {
    "VCPU": ("cpu_allocation_ratio", "initial_cpu_allocation_ratio"),
    "MEMORY_MB": ("ram_allocation_ratio", "initial_ram_allocation_ratio"),
    "DISK_GB": ("disk_allocation_ratio", "initial_disk_allocation_ratio"),
}


def reserved_host_resources(conf: cfg.ConfigOpts) -> dict[str, int]:
    """What the host keeps for itself, per resource class."""
    return {
        "VCPU": conf.reserved_host_cpus,
        "MEMORY_MB": conf.reserved_host_memory_mb,
        # Reserve whole gigabytes, rounding up: reserving less than asked
        # could hand out disk the host needs.
        "DISK_GB": math.ceil(conf.reserved_host_disk_mb / 1024),
    }


def allocation_ratio(conf: cfg.ConfigOpts, resource_class: str,
                     placed: Mapping[str, Inventory]) -> float | None:
    """The configured ratio; unset keeps placement's (an operator may have
    set it there), or the initial ratio for a class placement lacks. None
    for classes the framework has no ratio option for."""
    if resource_class not in RATIO_OPTIONS:
        return None
    option, initial = RATIO_OPTIONS[resource_class]
    if conf[option] is not None:
        return conf[option]
    if resource_class in placed:
        return placed[resource_class].allocation_ratio
    return conf[initial]


def reservations(
    conf: cfg.ConfigOpts, providers: Iterable[tuple[str, Mapping[str, Inventory]]]
) -> dict[str, dict[str, int]]:
    """provider uuid -> class -> reserved amount, for the classes the
    framework reserves: each provider reporting such a class gets its share
    (parents first, as ``providers`` come, each up to its total; the rest 0)."""
    left = reserved_host_resources(conf)
    shares: dict[str, dict[str, int]] = {}
    for uuid, inventory in providers:
        for rc, found in inventory.items():
            if rc in left:
                take = min(left[rc], found.total)
                shares.setdefault(uuid, {})[rc] = take
                left[rc] -= take
    return shares


def provider_inventory(
    conf: cfg.ConfigOpts,
    reported: Mapping[str, Inventory],
    placed: Mapping[str, Inventory],
    reserved: Mapping[str, int],
) -> dict[str, Inventory]:
    """One provider's reported inventory with its reservation share and the
    allocation ratios applied. ``placed`` is what placement holds now
    (empty for a new provider)."""
    result = {}
    for rc, inventory in reported.items():
        changes: dict = {}
        if rc in reserved:
            changes["reserved"] = reserved[rc]
        ratio = allocation_ratio(conf, rc, placed)
        if ratio is not None:
            changes["allocation_ratio"] = ratio
        result[rc] = dataclasses.replace(inventory, **changes)
    return result


def root_inventory(
    conf: cfg.ConfigOpts,
    reported: Mapping[str, Inventory],
    placed: Mapping[str, Inventory],
) -> dict[str, Inventory]:
    """A lone provider's inventory with the whole reservation and the
    ratios applied (a reservation larger than the total is capped at the
    total, since placement refuses reserved > total)."""
    shares = reservations(conf, [("root", reported)])
    return provider_inventory(conf, reported, placed, shares.get("root", {}))
