"""Contract: identifiers, values and shapes every backend checks before it
writes; a refused request changes nothing."""

from __future__ import annotations

import math

import pytest

from rtframework.placement import errors
from rtframework.placement import types as t
from rtframework.placement.contract_tests import new_uuid, unique

pytestmark = pytest.mark.placement


def spellings(uuid: str) -> list[str]:
    return [uuid, uuid.upper(), "{" + uuid + "}", uuid.replace("-", "")]


def write(consumer, allocations, *, project="proj", user="user", generation=None,
          consumer_type="INSTANCE"):
    return t.AllocationWrite(consumer_uuid=consumer, allocations=allocations,
                             project_id=project, user_id=user,
                             consumer_generation=generation, consumer_type=consumer_type)


def snapshot(backend, rp):
    """What a refused request must leave as it was."""
    return (backend.get_provider(rp), backend.get_inventories(rp),
            backend.get_provider_allocations(rp), backend.get_provider_usages(rp))


def test_spellings_of_one_uuid_are_one_provider(backend):
    uuid = new_uuid()
    created = backend.create_provider(unique(), uuid=uuid.upper())
    assert created.uuid == uuid
    for spelling in spellings(uuid):
        assert backend.get_provider(spelling).uuid == uuid
        with pytest.raises(errors.DuplicateUUID):
            backend.create_provider(unique(), uuid=spelling)
    assert [p.uuid for p in backend.list_providers(t.ProviderQuery(uuid=uuid.upper()))] == [uuid]


def test_spellings_of_one_consumer_are_one_consumer(backend, make_provider):
    rp = make_provider({"VCPU": 8})
    consumer = new_uuid()
    backend.write_allocations([write("{" + consumer.upper() + "}", {rp.uuid.upper(): {"VCPU": 2}})])
    for spelling in spellings(consumer):
        held = backend.get_consumer_allocations(spelling)
        assert (held.consumer_uuid, held.allocations) == (consumer, {rp.uuid: {"VCPU": 2}})
    assert backend.get_provider_allocations(rp.uuid) == {consumer: {"VCPU": 2}}
    with pytest.raises(errors.ConsumerGenerationConflict):
        backend.write_allocations([write(consumer.replace("-", ""), {rp.uuid: {"VCPU": 1}})])


@pytest.mark.parametrize("bad", ["not-a-uuid", "", "x" * 51, "../../resource_providers",
                                 "abc?x=1", 42, None])
def test_a_malformed_consumer_uuid_is_refused_and_nothing_written(backend, make_provider, bad):
    rp = make_provider({"VCPU": 8})
    before = snapshot(backend, rp.uuid)
    with pytest.raises(errors.InvalidRequest, match="consumer uuid"):
        backend.write_allocations([write(bad, {rp.uuid: {"VCPU": 1}})])
    assert snapshot(backend, rp.uuid) == before


@pytest.mark.parametrize("bad", ["../x", "nope", "", "a" * 37])
def test_a_malformed_provider_uuid_is_refused_on_every_call(backend, bad):
    calls = [
        lambda: backend.get_provider(bad),
        lambda: backend.get_inventories(bad),
        lambda: backend.get_provider_usages(bad),
        lambda: backend.get_provider_allocations(bad),
        lambda: backend.get_provider_traits(bad),
        lambda: backend.delete_provider(bad),
        lambda: backend.set_inventories(bad, 0, {"VCPU": t.Inventory(total=1)}),
        lambda: backend.create_provider(unique(), uuid=bad),
        lambda: backend.create_provider(unique(), parent_uuid=bad),
    ]
    for call in calls:
        with pytest.raises(errors.InvalidRequest, match="provider uuid"):
            call()


@pytest.mark.parametrize("field,value", [
    ("project", ""), ("project", "p" * 256), ("user", ""), ("user", "u" * 256),
    ("project", None), ("consumer_type", "instance"), ("consumer_type", ""),
    ("generation", -1), ("generation", "1"),
])
def test_bad_consumer_fields_are_refused_and_nothing_written(backend, make_provider, field,
                                                             value):
    rp = make_provider({"VCPU": 8})
    before = snapshot(backend, rp.uuid)
    with pytest.raises(errors.InvalidRequest) as exc:
        backend.write_allocations([write(new_uuid(), {rp.uuid: {"VCPU": 1}}, **{field: value})])
    assert field.replace("_", " ").split()[0] in str(exc.value)
    assert snapshot(backend, rp.uuid) == before


@pytest.mark.parametrize("amount", [0, -1, 2**31, 1.5, True, "1"])
def test_bad_amounts_are_refused_and_nothing_written(backend, make_provider, amount):
    rp = make_provider({"VCPU": 8})
    before = snapshot(backend, rp.uuid)
    with pytest.raises(errors.InvalidAllocation, match="VCPU"):
        backend.write_allocations([write(new_uuid(), {rp.uuid: {"VCPU": amount}})])
    assert snapshot(backend, rp.uuid) == before


def test_a_write_refused_for_one_consumer_writes_none_of_them(backend, make_provider):
    rp = make_provider({"VCPU": 8})
    before = snapshot(backend, rp.uuid)
    with pytest.raises(errors.InvalidRequest, match="project id"):
        backend.write_allocations([write(new_uuid(), {rp.uuid: {"VCPU": 1}}),
                                   write(new_uuid(), {rp.uuid: {"VCPU": 1}}, project="")])
    assert snapshot(backend, rp.uuid) == before


@pytest.mark.parametrize("ratio", [math.inf, -math.inf, math.nan, 0.0, -1.0, 1e39])
def test_non_finite_or_absurd_ratios_are_refused_and_nothing_written(backend, make_provider,
                                                                     ratio):
    rp = make_provider({"VCPU": 8})
    before = snapshot(backend, rp.uuid)
    with pytest.raises(errors.InvalidInventory, match="allocation_ratio"):
        backend.set_inventories(rp.uuid, rp.generation,
                                {"VCPU": t.Inventory(total=8, allocation_ratio=ratio)})
    with pytest.raises(errors.InvalidInventory, match="allocation_ratio"):
        backend.set_inventory(rp.uuid, rp.generation, "MEMORY_MB",
                              t.Inventory(total=8, allocation_ratio=ratio))
    assert snapshot(backend, rp.uuid) == before


@pytest.mark.parametrize("field,value", [("total", 2**31), ("reserved", 10**20),
                                         ("total", 0), ("step_size", 0), ("total", 1.0)])
def test_out_of_range_inventory_fields_are_refused(backend, make_provider, field, value):
    rp = make_provider({"VCPU": 8})
    before = snapshot(backend, rp.uuid)
    with pytest.raises(errors.InvalidInventory, match=field):
        backend.set_inventories(rp.uuid, rp.generation, {"VCPU": t.Inventory(**{
            "total": 8, field: value})})
    assert snapshot(backend, rp.uuid) == before


@pytest.mark.parametrize("name", ["", "n" * 201, None])
def test_provider_names_are_1_to_200_characters(backend, name):
    with pytest.raises(errors.InvalidRequest, match="provider name"):
        backend.create_provider(name)
    assert backend.create_provider("n" * 190 + unique("")[-10:]).name.startswith("n")


@pytest.mark.parametrize("query", [
    t.CandidateQuery(resources={}),
    t.CandidateQuery(resources={"VCPU": 0}),
    t.CandidateQuery(resources={"vcpu": 1}),
    t.CandidateQuery(resources={"VCPU": 1}, limit=0),
    t.CandidateQuery(resources={"VCPU": 1}, in_tree="../x"),
    t.CandidateQuery(resources={"VCPU": 1}, member_of=(frozenset({"agg"}),)),
    t.CandidateQuery(resources={"VCPU": 1}, required_traits=frozenset({"lower"})),
])
def test_malformed_candidate_requests_are_typed_errors(backend, query):
    with pytest.raises(errors.InvalidRequest):
        backend.get_allocation_candidates(query)


def test_project_usages_refuse_empty_or_long_ids(backend):
    for project in ("", "p" * 256):
        with pytest.raises(errors.InvalidRequest, match="project id"):
            backend.get_project_usages(project)
