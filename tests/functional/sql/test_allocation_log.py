"""What the sql backend logs of every allocation change, on every engine
and, on PostgreSQL, from both write paths (the one-statement write and the
general one): an operator reading the log learns, per provider, what a
consumer held before and after, and at which consumer generation."""

from __future__ import annotations

import logging
import uuid

import pytest

from rtframework.placement import types as t

LOGGER = "rtframework.placement.sql.allocations"


@pytest.fixture
def backend(on_each_write_path):
    return on_each_write_path


@pytest.fixture
def logged(caplog):
    caplog.set_level(logging.INFO, logger=LOGGER)

    def lines():
        found = [r.getMessage() for r in caplog.records if r.name == LOGGER]
        caplog.clear()
        return found

    return lines


def _provider(backend, name):
    rp = backend.create_provider(f"{name}-{uuid.uuid4().hex[:8]}")
    backend.set_inventories(rp.uuid, 0, {"VCPU": t.Inventory(total=8),
                                         "MEMORY_MB": t.Inventory(total=4096)})
    return rp


def _claim(backend, consumer, allocations, generation):
    backend.put_allocations(consumer, allocations, project_id="p", user_id="u",
                            consumer_generation=generation)


def test_each_change_is_logged_per_provider_with_before_and_after(backend, logged):
    a, b = sorted((_provider(backend, "log-a"), _provider(backend, "log-b")),
                  key=lambda rp: rp.uuid)
    la, lb = f"{a.uuid} ({a.name})", f"{b.uuid} ({b.name})"
    vm = str(uuid.uuid4())
    logged()

    _claim(backend, vm, {a.uuid: {"VCPU": 2}}, None)
    assert logged() == [
        f"allocation claimed: consumer {vm} on provider {la}: {{}} -> "
        f"{{'VCPU': 2}} (consumer generation None)"]

    _claim(backend, vm, {b.uuid: {"VCPU": 2}}, 1)
    assert logged() == [
        f"allocation released: consumer {vm} on provider {la}: "
        f"{{'VCPU': 2}} -> {{}} (consumer generation 1)",
        f"allocation claimed: consumer {vm} on provider {lb}: {{}} -> "
        f"{{'VCPU': 2}} (consumer generation 1)"]

    _claim(backend, vm, {b.uuid: {"VCPU": 4}}, 2)
    assert logged() == [
        f"allocation changed: consumer {vm} on provider {lb}: "
        f"{{'VCPU': 2}} -> {{'VCPU': 4}} "
        f"(consumer generation 2)"]

    _claim(backend, vm, {b.uuid: {"VCPU": 4}}, 3)
    assert logged() == []  # written (the generation moved), nothing changed

    _claim(backend, vm, {}, 4)
    assert logged() == [
        f"allocation released: consumer {vm} on provider {lb}: "
        f"{{'VCPU': 4}} -> {{}} (consumer generation 4)"]


def test_a_write_of_two_consumers_logs_each(backend, logged):
    a = _provider(backend, "log-a")
    la = f"{a.uuid} ({a.name})"
    vm, migration = str(uuid.uuid4()), str(uuid.uuid4())
    _claim(backend, vm, {a.uuid: {"VCPU": 2}}, None)
    logged()
    backend.write_allocations([
        t.AllocationWrite(consumer_uuid=migration, allocations={a.uuid: {"VCPU": 2}},
                          project_id="p", user_id="u", consumer_generation=None,
                          consumer_type="MIGRATION"),
        t.AllocationWrite(consumer_uuid=vm, allocations={a.uuid: {"VCPU": 1}},
                          project_id="p", user_id="u", consumer_generation=1),
    ])
    assert logged() == [
        f"allocation claimed: consumer {migration} on provider {la}: {{}} -> "
        f"{{'VCPU': 2}} (consumer generation None)",
        f"allocation changed: consumer {vm} on provider {la}: {{'VCPU': 2}} -> "
        f"{{'VCPU': 1}} (consumer generation 1)"]


def test_an_operator_delete_logs_what_each_provider_had(backend, logged):
    # (Run under both fixtures: the delete has one path, so this checks
    # that turning the one-statement write off changes nothing for it.)
    a, b = sorted((_provider(backend, "log-a"), _provider(backend, "log-b")),
                  key=lambda rp: rp.uuid)
    bystander = _provider(backend, "log-c")
    vm, other = str(uuid.uuid4()), str(uuid.uuid4())
    _claim(backend, vm, {a.uuid: {"VCPU": 1}, b.uuid: {"MEMORY_MB": 256}}, None)
    _claim(backend, other, {a.uuid: {"VCPU": 3}}, None)
    logged()
    backend.delete_allocations(vm)
    assert logged() == [
        f"allocation released: consumer {vm} on provider {a.uuid} ({a.name}): "
        f"{{'VCPU': 1}} -> {{}} (deleted by operator)",
        f"allocation released: consumer {vm} on provider {b.uuid} ({b.name}): "
        f"{{'MEMORY_MB': 256}} -> {{}} (deleted by operator)"]
    # Each provider it freed moved by one; the other consumer keeps its own.
    assert backend.get_provider(a.uuid).generation == 1 + 2 + 1  # inventory, claims, delete
    assert backend.get_provider(b.uuid).generation == 1 + 1 + 1
    assert backend.get_provider(bystander.uuid).generation == 1  # held nothing of it
    assert backend.get_provider_allocations(a.uuid) == {other: {"VCPU": 3}}
    assert backend.get_provider_allocations(b.uuid) == {}
    gone = backend.get_consumer_allocations(vm)
    assert (gone.allocations, gone.generation) == ({}, None)
    kept = backend.get_consumer_allocations(other)
    assert (kept.allocations, kept.generation) == ({a.uuid: {"VCPU": 3}}, 1)
    # A consumer that holds nothing is deleted quietly, and nothing moves.
    backend.delete_allocations(vm)
    assert logged() == []
    assert backend.get_provider(a.uuid).generation == 4
