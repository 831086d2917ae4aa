"""Contract: allocation writes, consumer generations, capacity, units."""

from __future__ import annotations

import pytest

from rtframework.placement import errors
from rtframework.placement import types as t
from rtframework.placement.contract_tests import new_uuid

pytestmark = pytest.mark.placement


def write(consumer, allocations, generation, project="proj", user="user"):
    return t.AllocationWrite(consumer_uuid=consumer, allocations=allocations,
                             project_id=project, user_id=user, consumer_generation=generation)


def test_first_write_creates_the_consumer_at_generation_one(backend, make_provider, claim):
    rp = make_provider({"VCPU": 8, "MEMORY_MB": 2048})
    consumer = claim({rp.uuid: {"VCPU": 2, "MEMORY_MB": 512}}, project="p1", user="u1")
    got = backend.get_consumer_allocations(consumer)
    assert got.allocations == {rp.uuid: {"VCPU": 2, "MEMORY_MB": 512}}
    assert (got.generation, got.project_id, got.user_id) == (1, "p1", "u1")
    assert backend.get_provider_allocations(rp.uuid) == {consumer: {"VCPU": 2, "MEMORY_MB": 512}}


def test_allocation_write_bumps_the_provider_generation(backend, make_provider, claim):
    rp = make_provider({"VCPU": 8})
    claim({rp.uuid: {"VCPU": 1}})
    assert backend.get_provider(rp.uuid).generation == rp.generation + 1


def test_a_consumer_moving_bumps_where_it_lands_and_emptying_bumps_all(
        backend, make_provider, claim):
    # What a heal that skips re-reads on unchanged generations relies on:
    # every arrival or change shows, and so does a consumer emptied. (A
    # provider a consumer only moves off may keep its generation.)
    source, stay, dest = (make_provider({"VCPU": 8}) for _ in range(3))
    consumer = claim({source.uuid: {"VCPU": 1}, stay.uuid: {"VCPU": 1}})
    before = {rp.uuid: backend.get_provider(rp.uuid).generation for rp in (source, stay, dest)}
    claim({stay.uuid: {"VCPU": 1}, dest.uuid: {"VCPU": 2}}, consumer=consumer, generation=1)
    moved = {rp: backend.get_provider(rp).generation for rp in before}
    assert moved[stay.uuid] == before[stay.uuid] + 1
    assert moved[dest.uuid] == before[dest.uuid] + 1
    assert moved[source.uuid] in (before[source.uuid], before[source.uuid] + 1)
    backend.write_allocations([write(consumer, {}, 2)])
    for rp in (stay.uuid, dest.uuid):
        assert backend.get_provider(rp).generation == moved[rp] + 1
        assert backend.get_provider_usages(rp) == {"VCPU": 0}


def test_operator_delete_bumps_every_provider_it_frees(backend, make_provider, claim):
    # Trackers notice allocation changes through provider generations; a
    # delete that left them alone would hide the change from every heal.
    first, second = make_provider({"VCPU": 8}), make_provider({"VCPU": 8})
    consumer = claim({first.uuid: {"VCPU": 1}, second.uuid: {"VCPU": 2}})
    before = {rp: backend.get_provider(rp).generation for rp in (first.uuid, second.uuid)}
    backend.delete_allocations(consumer)
    assert backend.get_consumer_allocations(consumer).allocations == {}
    for rp, generation in before.items():
        assert backend.get_provider(rp).generation == generation + 1
        assert backend.get_provider_usages(rp) == {"VCPU": 0}


def test_unknown_consumer_reads_as_empty(backend):
    got = backend.get_consumer_allocations(new_uuid())
    assert (got.allocations, got.generation) == ({}, None)


def test_many_consumers_read_at_once_as_one_by_one(backend, make_provider, claim):
    first, second = make_provider({"VCPU": 8}), make_provider({"VCPU": 8})
    both = claim({first.uuid: {"VCPU": 1}, second.uuid: {"VCPU": 2}}, project="p1")
    one = claim({second.uuid: {"VCPU": 3}}, user="u2")
    unknown = new_uuid()
    got = backend.get_consumers_allocations([both, one, unknown])
    assert got == {c: backend.get_consumer_allocations(c) for c in (both, one, unknown)}
    assert got[both].allocations == {first.uuid: {"VCPU": 1}, second.uuid: {"VCPU": 2}}
    assert (got[unknown].allocations, got[unknown].generation) == ({}, None)
    assert backend.get_consumers_allocations([]) == {}


def test_replace_needs_the_current_consumer_generation(backend, make_provider, claim):
    rp = make_provider({"VCPU": 8})
    consumer = claim({rp.uuid: {"VCPU": 2}})
    for stale in (None, 0, 2):
        with pytest.raises(errors.ConsumerGenerationConflict) as exc:
            claim({rp.uuid: {"VCPU": 4}}, consumer=consumer, generation=stale)
        assert "consumer generation conflict" in str(exc.value)
    claim({rp.uuid: {"VCPU": 4}}, consumer=consumer, generation=1)
    got = backend.get_consumer_allocations(consumer)
    assert (got.allocations, got.generation) == ({rp.uuid: {"VCPU": 4}}, 2)


def test_new_consumer_with_a_generation_is_a_conflict(backend, make_provider, claim):
    rp = make_provider({"VCPU": 8})
    with pytest.raises(errors.ConsumerGenerationConflict):
        claim({rp.uuid: {"VCPU": 1}}, generation=3)
    assert backend.get_provider_usages(rp.uuid) == {"VCPU": 0}


def test_emptied_consumer_is_forgotten(backend, make_provider, claim):
    rp = make_provider({"VCPU": 8})
    consumer = claim({rp.uuid: {"VCPU": 2}})
    claim({}, consumer=consumer, generation=1)
    got = backend.get_consumer_allocations(consumer)
    assert (got.allocations, got.generation) == ({}, None)
    # Its next write starts from "none" again.
    claim({rp.uuid: {"VCPU": 3}}, consumer=consumer, generation=None)
    assert backend.get_consumer_allocations(consumer).generation == 1


def test_capacity_counts_reserved_and_ratio(backend, make_provider, claim):
    rp = make_provider({"VCPU": t.Inventory(total=4, reserved=1, allocation_ratio=2.0)})
    claim({rp.uuid: {"VCPU": 4}})
    claim({rp.uuid: {"VCPU": 2}})  # 6 == (4 - 1) * 2
    with pytest.raises(errors.CapacityExceeded) as exc:
        claim({rp.uuid: {"VCPU": 1}})
    message = str(exc.value)
    assert rp.uuid in message and "VCPU" in message
    assert backend.get_provider_usages(rp.uuid) == {"VCPU": 6}


def test_capacity_error_changes_nothing(backend, make_provider, claim):
    rp = make_provider({"VCPU": 8, "MEMORY_MB": 1024})
    consumer = claim({rp.uuid: {"VCPU": 2, "MEMORY_MB": 512}})
    with pytest.raises(errors.CapacityExceeded):
        claim({rp.uuid: {"VCPU": 2, "MEMORY_MB": 2048}}, consumer=consumer, generation=1)
    got = backend.get_consumer_allocations(consumer)
    assert (got.allocations, got.generation) == ({rp.uuid: {"VCPU": 2, "MEMORY_MB": 512}}, 1)


def test_replacing_own_allocation_does_not_count_it_twice(backend, make_provider, claim):
    rp = make_provider({"VCPU": 8})
    consumer = claim({rp.uuid: {"VCPU": 6}})
    claim({rp.uuid: {"VCPU": 8}}, consumer=consumer, generation=1)
    assert backend.get_provider_usages(rp.uuid) == {"VCPU": 8}


@pytest.mark.parametrize("amount", [1, 3, 10, 0], ids=["below-min", "off-step", "above-max",
                                                      "zero"])
def test_unit_constraints(backend, make_provider, claim, amount):
    rp = make_provider({"VCPU": t.Inventory(total=16, min_unit=2, max_unit=8, step_size=2)})
    with pytest.raises((errors.InvalidAllocation, errors.InvalidRequest)):
        claim({rp.uuid: {"VCPU": amount}})
    claim({rp.uuid: {"VCPU": 4}})


def test_class_without_inventory_is_invalid(backend, make_provider, claim):
    rp = make_provider({"VCPU": 8})
    with pytest.raises(errors.InvalidAllocation):
        claim({rp.uuid: {"VCPU": 1, "MEMORY_MB": 1}})
    assert backend.get_provider_usages(rp.uuid) == {"VCPU": 0}


def test_unknown_provider_in_allocation(backend, make_provider, claim):
    rp = make_provider({"VCPU": 8})
    with pytest.raises(errors.ProviderNotFound):
        claim({rp.uuid: {"VCPU": 1}, new_uuid(): {"VCPU": 1}})
    assert backend.get_provider_usages(rp.uuid) == {"VCPU": 0}


def test_over_capacity_provider_tolerates_writes_that_do_not_raise_usage(
    backend, make_provider, claim
):
    rp = make_provider({"VCPU": 8, "MEMORY_MB": 1024})
    consumer = claim({rp.uuid: {"VCPU": 6, "MEMORY_MB": 256}})
    gen = backend.get_inventories(rp.uuid).generation
    backend.set_inventories(rp.uuid, gen, {"VCPU": t.Inventory(4), "MEMORY_MB": t.Inventory(1024)})
    # Same VCPU, more memory: VCPU usage is not raised, so it is accepted.
    claim({rp.uuid: {"VCPU": 6, "MEMORY_MB": 512}}, consumer=consumer, generation=1)
    # Shrinking the over-committed class is accepted too.
    claim({rp.uuid: {"VCPU": 5, "MEMORY_MB": 512}}, consumer=consumer, generation=2)
    with pytest.raises(errors.CapacityExceeded):
        claim({rp.uuid: {"VCPU": 6, "MEMORY_MB": 512}}, consumer=consumer, generation=3)
    with pytest.raises(errors.CapacityExceeded):
        claim({rp.uuid: {"VCPU": 1}})
    assert backend.get_provider_usages(rp.uuid) == {"VCPU": 5, "MEMORY_MB": 512}


def test_multi_consumer_move_is_one_write(backend, make_provider, claim):
    """Migration-style move: source goes to M, the instance claims D."""
    src, dst = make_provider({"VCPU": 8}), make_provider({"VCPU": 8})
    instance = claim({src.uuid: {"VCPU": 4}})
    migration = new_uuid()
    backend.write_allocations([
        write(migration, {src.uuid: {"VCPU": 4}}, None),
        write(instance, {dst.uuid: {"VCPU": 4}}, 1),
    ])
    assert backend.get_consumer_allocations(migration).allocations == {src.uuid: {"VCPU": 4}}
    assert backend.get_consumer_allocations(instance).allocations == {dst.uuid: {"VCPU": 4}}
    # Confirm: the migration consumer goes away.
    backend.write_allocations([write(migration, {}, 1)])
    assert backend.get_consumer_allocations(migration).generation is None
    assert backend.get_provider_usages(src.uuid) == {"VCPU": 0}


def test_amounts_of_all_consumers_in_a_write_are_summed(backend, make_provider):
    rp = make_provider({"VCPU": 8})
    with pytest.raises(errors.CapacityExceeded):
        backend.write_allocations([
            write(new_uuid(), {rp.uuid: {"VCPU": 5}}, None),
            write(new_uuid(), {rp.uuid: {"VCPU": 5}}, None),
        ])
    assert backend.get_provider_allocations(rp.uuid) == {}


def test_multi_consumer_write_is_all_or_nothing_on_stale_generation(
    backend, make_provider, claim
):
    src, dst = make_provider({"VCPU": 8}), make_provider({"VCPU": 8})
    instance = claim({src.uuid: {"VCPU": 4}})
    migration = new_uuid()
    with pytest.raises(errors.ConsumerGenerationConflict):
        backend.write_allocations([
            write(migration, {src.uuid: {"VCPU": 4}}, None),
            write(instance, {dst.uuid: {"VCPU": 4}}, 0),
        ])
    assert backend.get_consumer_allocations(migration).generation is None
    got = backend.get_consumer_allocations(instance)
    assert (got.allocations, got.generation) == ({src.uuid: {"VCPU": 4}}, 1)
    assert backend.get_provider_usages(dst.uuid) == {"VCPU": 0}


def test_multi_consumer_write_is_all_or_nothing_on_capacity(backend, make_provider, claim):
    src, dst = make_provider({"VCPU": 8}), make_provider({"VCPU": 2})
    instance = claim({src.uuid: {"VCPU": 4}})
    migration = new_uuid()
    with pytest.raises(errors.CapacityExceeded) as exc:
        backend.write_allocations([
            write(migration, {src.uuid: {"VCPU": 4}}, None),
            write(instance, {dst.uuid: {"VCPU": 4}}, 1),
        ])
    assert dst.uuid in str(exc.value)
    assert backend.get_consumer_allocations(migration).generation is None
    assert backend.get_consumer_allocations(instance).allocations == {src.uuid: {"VCPU": 4}}
    assert backend.get_provider_usages(src.uuid) == {"VCPU": 4}


def test_delete_allocations_ignores_the_generation(backend, make_provider, claim):
    a, b = make_provider({"VCPU": 8}), make_provider({"VCPU": 8})
    consumer = claim({a.uuid: {"VCPU": 2}, b.uuid: {"VCPU": 3}})
    claim({a.uuid: {"VCPU": 1}}, consumer=consumer, generation=1)
    backend.delete_allocations(consumer)
    assert backend.get_consumer_allocations(consumer).generation is None
    assert backend.get_provider_usages(a.uuid) == {"VCPU": 0}


def test_provider_allocations_of_unknown_provider(backend):
    with pytest.raises(errors.ProviderNotFound):
        backend.get_provider_allocations(new_uuid())
