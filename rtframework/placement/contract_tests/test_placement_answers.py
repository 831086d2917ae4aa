"""Contract: which error a request with two problems gets, and writes that
change nothing, as OpenStack Placement answers them.

Each case was found by the differential test against Placement
(tests/functional/placement/test_differential.py); they run on every backend.
"""

from __future__ import annotations

import pytest

from rtframework.placement import errors
from rtframework.placement import types as t
from rtframework.placement.contract_tests import new_uuid, unique
from rtframework.placement.contract_tests.test_traits_classes import custom

pytestmark = pytest.mark.placement


def test_unchanged_traits_keep_the_generation_but_still_check_it(backend, make_provider):
    backend.ensure_trait(trait := custom("T"))
    rp = make_provider(traits=[trait])
    assert backend.set_provider_traits(rp.uuid, rp.generation, frozenset([trait])) \
        == rp.generation
    assert backend.get_provider(rp.uuid).generation == rp.generation
    with pytest.raises(errors.ProviderGenerationConflict):
        backend.set_provider_traits(rp.uuid, rp.generation - 1, frozenset([trait]))


def test_stale_generation_is_reported_before_an_unknown_trait(backend, make_provider):
    rp = make_provider()
    with pytest.raises(errors.ProviderGenerationConflict):
        backend.set_provider_traits(rp.uuid, rp.generation + 1, frozenset([custom("NONE")]))


def test_missing_parent_is_reported_before_a_taken_name(backend, make_provider):
    taken = make_provider()
    with pytest.raises(errors.ProviderNotFound):
        backend.create_provider(taken.name, parent_uuid=new_uuid())


def test_a_provider_cannot_be_its_own_parent(backend):
    rp = new_uuid()
    with pytest.raises(errors.InvalidRequest):
        backend.create_provider(unique(), uuid=rp, parent_uuid=rp)
    with pytest.raises(errors.ProviderNotFound):
        backend.get_provider(rp)


def test_a_loop_in_the_tree_is_reported_before_a_taken_name(backend, make_provider):
    root = make_provider()
    child = make_provider(parent=root.uuid)
    other = make_provider()
    with pytest.raises(errors.InvalidRequest):
        backend.update_provider(root.uuid, name=other.name, parent_uuid=child.uuid)
    assert backend.get_provider(root.uuid) == root


def test_stale_generation_is_reported_before_an_unknown_class(backend, make_provider):
    rp = make_provider()
    with pytest.raises(errors.ProviderGenerationConflict):
        backend.set_inventories(rp.uuid, rp.generation + 1,
                                {custom("NONE"): t.Inventory(total=1)})


def test_listing_by_an_unknown_class_or_trait_is_refused(backend, make_provider):
    make_provider(inventory={"VCPU": 4})
    with pytest.raises(errors.ResourceClassNotFound):
        backend.list_providers(t.ProviderQuery(resources={"VCPU": 1, custom("NONE"): 1}))
    with pytest.raises(errors.TraitNotFound):
        backend.list_providers(t.ProviderQuery(required_traits=frozenset([custom("NONE")])))


def test_allocating_an_unknown_class_names_the_class(backend, make_provider):
    rp = make_provider(inventory={"VCPU": 4})
    consumer = new_uuid()
    with pytest.raises(errors.ResourceClassNotFound):
        backend.put_allocations(consumer, {rp.uuid: {custom("NONE"): 1}}, project_id="p",
                                user_id="u", consumer_generation=None)
    assert backend.get_consumer_allocations(consumer).generation is None
    assert backend.get_provider(rp.uuid).generation == rp.generation


def test_a_missing_provider_is_reported_before_an_unknown_class(backend, make_provider):
    rp = make_provider(inventory={"VCPU": 4})
    with pytest.raises(errors.ProviderNotFound):
        backend.write_allocations([
            t.AllocationWrite(consumer_uuid=new_uuid(), allocations={rp.uuid: {custom("N"): 1}},
                              project_id="p", user_id="u", consumer_generation=None),
            t.AllocationWrite(consumer_uuid=new_uuid(), allocations={new_uuid(): {"VCPU": 1}},
                              project_id="p", user_id="u", consumer_generation=None),
        ])
