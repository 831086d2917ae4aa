"""Contract: writing nothing for a consumer nobody knows leaves nothing behind."""

from __future__ import annotations

import pytest

from rtframework.placement import errors
from rtframework.placement import types as t
from rtframework.placement.contract_tests import new_uuid

pytestmark = pytest.mark.placement


def write(consumer, allocations, generation):
    return t.AllocationWrite(consumer_uuid=consumer, allocations=allocations, project_id="p",
                             user_id="u", consumer_generation=generation)


def test_an_empty_write_for_a_new_consumer_leaves_it_new(backend, make_provider):
    rp = make_provider({"VCPU": 4})
    ghost, other = new_uuid(), new_uuid()
    backend.write_allocations([write(ghost, {}, None), write(other, {rp.uuid: {"VCPU": 1}}, None)])
    assert backend.get_consumer_allocations(ghost) == t.ConsumerAllocations(ghost, {})
    # Still new: a first write naming "no generation" is accepted.
    backend.write_allocations([write(ghost, {rp.uuid: {"VCPU": 1}}, None)])
    assert backend.get_consumer_allocations(ghost).generation == 1


def test_an_empty_write_naming_a_held_consumer_new_is_a_conflict(backend, make_provider, claim):
    rp = make_provider({"VCPU": 4})
    consumer = claim({rp.uuid: {"VCPU": 1}})
    with pytest.raises(errors.ConsumerGenerationConflict):
        backend.write_allocations([write(consumer, {}, None)])
    assert backend.get_provider_usages(rp.uuid) == {"VCPU": 1}
