"""What the sql backend's allocation write answers when it refuses, on
every engine and, on PostgreSQL, whichever write path runs first: the
error class and its whole message (what a caller shows or logs), and that
nothing was written."""

from __future__ import annotations

import uuid

import pytest

from rtframework.placement import errors
from rtframework.placement import types as t


@pytest.fixture
def backend(on_each_write_path):
    return on_each_write_path


@pytest.fixture
def provider(backend):
    rp = backend.create_provider(f"err-{uuid.uuid4().hex[:8]}")
    backend.set_inventories(rp.uuid, 0, {"VCPU": t.Inventory(total=8)})
    return rp.uuid


def _write(backend, consumer, allocations, generation, consumer_type="INSTANCE"):
    backend.write_allocations([t.AllocationWrite(
        consumer_uuid=consumer, allocations=allocations, project_id="p", user_id="u",
        consumer_generation=generation, consumer_type=consumer_type)])


def _unchanged(backend, provider, generation=1, held=None):
    assert backend.get_provider(provider).generation == generation
    assert backend.get_provider_allocations(provider) == (held or {})


def test_a_new_consumer_given_a_generation(backend, provider):
    mine = str(uuid.uuid4())
    with pytest.raises(errors.ConsumerGenerationConflict) as caught:
        _write(backend, mine, {provider: {"VCPU": 1}}, 4)
    assert str(caught.value) == (
        f"consumer generation conflict - expected null but got 4 (consumer {mine})")
    _unchanged(backend, provider)


def test_a_held_consumer_given_no_or_a_stale_generation(backend, provider):
    mine = str(uuid.uuid4())
    _write(backend, mine, {provider: {"VCPU": 1}}, None)
    for given, shown in ((None, "null"), (3, "3")):
        with pytest.raises(errors.ConsumerGenerationConflict) as caught:
            _write(backend, mine, {provider: {"VCPU": 2}}, given)
        assert str(caught.value) == (
            f"consumer generation conflict - expected 1 but got {shown} (consumer {mine})")
    _unchanged(backend, provider, 2, {mine: {"VCPU": 1}})


def test_an_unknown_provider_is_named_with_its_consumer(backend, provider):
    mine, nowhere = str(uuid.uuid4()), str(uuid.uuid4())
    with pytest.raises(errors.ProviderNotFound) as caught:
        _write(backend, mine, {provider: {"VCPU": 1}, nowhere: {"VCPU": 1}}, None)
    assert str(caught.value) == (
        f"resource provider {nowhere} not found (allocation of consumer {mine})")
    _unchanged(backend, provider)


def test_unknown_classes_are_named_sorted(backend, provider):
    mine = str(uuid.uuid4())
    backend.ensure_resource_class("CUSTOM_KNOWN")
    with pytest.raises(errors.ResourceClassNotFound) as caught:
        _write(backend, mine, {provider: {"CUSTOM_ZED": 1, "CUSTOM_ABC": 1, "VCPU": 1}}, None)
    assert str(caught.value) == (
        f"resource class(es) CUSTOM_ABC, CUSTOM_ZED not found (allocation of consumer {mine})")
    # A class that exists but that the provider has no inventory of is
    # another error, and so is a standard class without inventory.
    for rc in ("CUSTOM_KNOWN", "DISK_GB"):
        with pytest.raises(errors.InvalidAllocation) as caught:
            _write(backend, mine, {provider: {rc: 1}}, None)
        assert not isinstance(caught.value, errors.ResourceClassNotFound)
        assert rc in str(caught.value)
    _unchanged(backend, provider)


def test_the_consumer_fields_are_written_and_replaced(backend, provider):
    mine = str(uuid.uuid4())
    _write(backend, mine, {provider: {"VCPU": 1}}, None, consumer_type="MIGRATION")
    got = backend.get_consumer_allocations(mine)
    assert (got.project_id, got.user_id, got.consumer_type, got.generation) == \
        ("p", "u", "MIGRATION", 1)
    backend.write_allocations([t.AllocationWrite(
        consumer_uuid=mine, allocations={provider: {"VCPU": 2}}, project_id="p2",
        user_id="u2", consumer_generation=1, consumer_type="INSTANCE")])
    got = backend.get_consumer_allocations(mine)
    assert (got.allocations, got.project_id, got.user_id, got.consumer_type,
            got.generation) == ({provider: {"VCPU": 2}}, "p2", "u2", "INSTANCE", 2)
    assert backend.get_project_usages("p2") == {"VCPU": 2}
    assert backend.get_project_usages("p") == {}


def test_empty_writes_create_no_consumer_and_forget_an_emptied_one(backend, provider):
    held, new, also_new = (str(uuid.uuid4()) for _ in range(3))
    _write(backend, held, {provider: {"VCPU": 1}}, None)
    # One write: a new consumer with nothing (no row), then one emptied
    # (forgotten), then a new one that holds something (created).
    backend.write_allocations([
        t.AllocationWrite(consumer_uuid=new, allocations={}, project_id="p", user_id="u",
                          consumer_generation=None),
        t.AllocationWrite(consumer_uuid=held, allocations={}, project_id="p", user_id="u",
                          consumer_generation=1),
        t.AllocationWrite(consumer_uuid=also_new, allocations={provider: {"VCPU": 2}},
                          project_id="p", user_id="u", consumer_generation=None),
    ])
    got = backend.get_consumers_allocations([new, held, also_new])
    assert {c: (a.allocations, a.generation) for c, a in got.items()} == {
        new: ({}, None), held: ({}, None), also_new: ({provider: {"VCPU": 2}}, 1)}
    # Forgotten: the next write starts from no generation again.
    _write(backend, held, {provider: {"VCPU": 1}}, None)
    assert backend.get_consumer_allocations(held).generation == 1


def test_a_write_sums_what_its_consumers_request_and_release(backend, provider):
    name = backend.get_provider(provider).name
    a, b, c = (str(uuid.uuid4()) for _ in range(3))
    _write(backend, a, {provider: {"VCPU": 3}}, None)
    _write(backend, b, {provider: {"VCPU": 3}}, None)

    def two(first, second):
        backend.write_allocations([
            t.AllocationWrite(consumer_uuid=u, allocations={provider: {"VCPU": n}},
                              project_id="p", user_id="u", consumer_generation=g)
            for u, n, g in (first, second)])

    # Two new consumers of 2 and 4 on 8 - 6 used: 6 more does not fit.
    with pytest.raises(errors.CapacityExceeded) as caught:
        two((c, 2, None), (str(uuid.uuid4()), 4, None))
    assert str(caught.value) == (
        f"capacity exceeded on provider {provider} ({name}) for VCPU: "
        "used 6 + requested 6 > capacity 8.0")
    _unchanged(backend, provider, 3, {a: {"VCPU": 3}, b: {"VCPU": 3}})
    # Both holders replaced in one write: both releases count (0 + 8 fits).
    two((a, 4, 1), (b, 4, 1))
    _unchanged(backend, provider, 4, {a: {"VCPU": 4}, b: {"VCPU": 4}})
