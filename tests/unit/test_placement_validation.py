"""Rules of the placement validation module (no database)."""

from __future__ import annotations

import pytest

from rtframework.placement import errors
from rtframework.placement import types as t
from rtframework.placement import validation as v


@pytest.mark.parametrize("name", ["VCPU", "MEMORY_MB", "CUSTOM_GPU_A100", "CUSTOM_1",
                                  "CUSTOM_" + "A" * 248])
def test_valid_resource_class_names(name):
    assert v.check_resource_class_name(name) is None  # accepted: no InvalidResourceClass


@pytest.mark.parametrize("name", ["vcpu", "CUSTOM_", "CUSTOM_lower", "GPU", "CUSTOM_A-B",
                                  "CUSTOM_" + "A" * 250])
def test_invalid_resource_class_names(name):
    with pytest.raises(errors.InvalidResourceClass):
        v.check_resource_class_name(name)


def test_standard_class_cannot_be_deleted():
    with pytest.raises(errors.InvalidResourceClass, match="standard"):
        v.check_custom_resource_class_name("VCPU")


def test_trait_names():
    v.check_trait_name("HW_CPU_X86_AVX2")
    v.check_trait_name("CUSTOM_FAST_DISK")
    with pytest.raises(errors.InvalidTrait):
        v.check_trait_name("FAST_DISK")


def test_inventory_error_names_provider_class_and_numbers():
    with pytest.raises(errors.InvalidInventory) as exc:
        v.check_inventory("rp-1 (host)", "VCPU", t.Inventory(total=4, reserved=5))
    assert str(exc.value) == "inventory of VCPU on provider rp-1 (host): reserved 5 > total 4"


@pytest.mark.parametrize("field,value", [("total", 2**31), ("total", True), ("step_size", 1.5)])
def test_inventory_fields_are_bounded_ints(field, value):
    inv = t.Inventory(total=4, **{field: value}) if field != "total" else t.Inventory(total=value)
    with pytest.raises(errors.InvalidInventory):
        v.check_inventory("rp", "VCPU", inv)


def test_amount_rules():
    inv = t.Inventory(total=16, min_unit=2, max_unit=8, step_size=2)
    v.check_amount("rp", "VCPU", 4, inv)
    for amount, words in [(1, "min_unit 2"), (10, "max_unit 8"), (3, "step_size 2"),
                          (0, "from 1 to")]:
        with pytest.raises(errors.InvalidAllocation, match=words):
            v.check_amount("rp", "VCPU", amount, inv)
    with pytest.raises(errors.InvalidAllocation, match="no inventory of VCPU"):
        v.check_amount("rp", "VCPU", 1, None)


def test_capacity_message():
    inv = t.Inventory(total=8)
    with pytest.raises(errors.CapacityExceeded) as exc:
        v.check_capacity("u1 (host)", "VCPU", used_before=6, used_others=6, requested=4, inv=inv)
    assert str(exc.value) == (
        "capacity exceeded on provider u1 (host) for VCPU: used 6 + requested 4 > capacity 8.0")


def test_over_capacity_tolerated_when_usage_does_not_rise():
    inv = t.Inventory(total=4)
    v.check_capacity("rp", "VCPU", used_before=6, used_others=0, requested=6, inv=inv)
    v.check_capacity("rp", "VCPU", used_before=6, used_others=0, requested=5, inv=inv)
    with pytest.raises(errors.CapacityExceeded):
        v.check_capacity("rp", "VCPU", used_before=6, used_others=0, requested=7, inv=inv)
