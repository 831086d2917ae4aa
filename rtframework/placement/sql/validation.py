"""Checks of names, inventories and amounts, before anything is written.

Pure functions without database access, so that the rules Placement
enforces are written down (and unit tested) in one place.
"""

from __future__ import annotations

import re

import os_resource_classes
import os_traits

from rtframework.placement import errors
from rtframework.placement import types as t

CUSTOM_PREFIX = "CUSTOM_"
_CUSTOM_NAME = re.compile(r"^CUSTOM_[A-Z0-9_]+$")
_MAX_NAME = 255

STANDARD_CLASSES: frozenset[str] = frozenset(os_resource_classes.STANDARDS)
STANDARD_TRAITS: frozenset[str] = frozenset(os_traits.get_traits())


def is_custom_name(name: str) -> bool:
    return len(name) <= _MAX_NAME and bool(_CUSTOM_NAME.match(name))


def check_resource_class_name(name: str) -> None:
    """A class name is standard or CUSTOM_ followed by [A-Z0-9_]."""
    if name not in STANDARD_CLASSES and not is_custom_name(name):
        raise errors.InvalidResourceClass(
            f"invalid resource class {name!r}: neither a standard class nor "
            f"CUSTOM_ followed by upper-case letters, digits and underscores"
        )


def check_custom_resource_class_name(name: str) -> None:
    """Only custom classes may be created or deleted."""
    check_resource_class_name(name)
    if name in STANDARD_CLASSES:
        raise errors.InvalidResourceClass(
            f"resource class {name} is a standard class and cannot be deleted"
        )


def check_trait_name(name: str) -> None:
    if name not in STANDARD_TRAITS and not is_custom_name(name):
        raise errors.InvalidTrait(
            f"invalid trait {name!r}: neither a standard trait (os-traits) nor "
            f"CUSTOM_ followed by upper-case letters, digits and underscores"
        )


def check_inventory(provider: str, resource_class: str, inv: t.Inventory) -> None:
    """The constraints Placement puts on one inventory record.

    It does not require max_unit <= total (a max_unit of 2**31-1 is the
    default) and it allows reserved == total (nothing allocatable).
    """
    where = f"inventory of {resource_class} on provider {provider}"
    for field in ("total", "reserved", "min_unit", "max_unit", "step_size"):
        value = getattr(inv, field)
        if not isinstance(value, int) or isinstance(value, bool):
            raise errors.InvalidInventory(f"{where}: {field} must be an integer, got {value!r}")
        if value > t.MAX_INT:
            raise errors.InvalidInventory(f"{where}: {field} {value} > {t.MAX_INT}")
    if inv.total < 1:
        raise errors.InvalidInventory(f"{where}: total {inv.total} < 1")
    if inv.reserved < 0:
        raise errors.InvalidInventory(f"{where}: reserved {inv.reserved} < 0")
    if inv.reserved > inv.total:
        raise errors.InvalidInventory(
            f"{where}: reserved {inv.reserved} > total {inv.total}"
        )
    if inv.min_unit < 1:
        raise errors.InvalidInventory(f"{where}: min_unit {inv.min_unit} < 1")
    if inv.max_unit < 1:
        raise errors.InvalidInventory(f"{where}: max_unit {inv.max_unit} < 1")
    if inv.min_unit > inv.max_unit:
        raise errors.InvalidInventory(
            f"{where}: min_unit {inv.min_unit} > max_unit {inv.max_unit}"
        )
    if inv.step_size < 1:
        raise errors.InvalidInventory(f"{where}: step_size {inv.step_size} < 1")
    ratio = inv.allocation_ratio
    if isinstance(ratio, bool) or not isinstance(ratio, int | float) or not ratio > 0:
        raise errors.InvalidInventory(f"{where}: allocation_ratio {ratio!r} must be > 0")


def check_amount(provider: str, resource_class: str, amount: int, inv: t.Inventory | None) -> None:
    """One consumer's amount of one class on one provider."""
    if not isinstance(amount, int) or isinstance(amount, bool) or amount < 1:
        raise errors.InvalidAllocation(
            f"allocation of {resource_class} on provider {provider}: amount must be an "
            f"integer >= 1, got {amount!r}"
        )
    if inv is None:
        raise errors.InvalidAllocation(
            f"provider {provider} has no inventory of {resource_class}"
        )
    if amount < inv.min_unit:
        raise errors.InvalidAllocation(
            f"allocation of {amount} {resource_class} on provider {provider} "
            f"is below min_unit {inv.min_unit}"
        )
    if amount > inv.max_unit:
        raise errors.InvalidAllocation(
            f"allocation of {amount} {resource_class} on provider {provider} "
            f"is above max_unit {inv.max_unit}"
        )
    if amount % inv.step_size:
        raise errors.InvalidAllocation(
            f"allocation of {amount} {resource_class} on provider {provider} "
            f"is not a multiple of step_size {inv.step_size}"
        )


def check_capacity(
    provider: str, resource_class: str, *, used_before: int, used_others: int, requested: int,
    inv: t.Inventory,
) -> None:
    """Room for ``requested`` next to what other consumers hold.

    ``used_before`` is the usage before the write (including what the
    writing consumers held). A provider already over capacity (its inventory
    shrank) is tolerated as long as the write does not raise its usage.
    """
    capacity = inv.capacity
    after = used_others + requested
    if after > capacity and after > used_before:
        raise errors.CapacityExceeded(
            f"capacity exceeded on provider {provider} for {resource_class}: "
            f"used {used_others} + requested {requested} > capacity {capacity}"
        )
