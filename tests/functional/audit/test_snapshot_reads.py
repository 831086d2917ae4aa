"""A check reads each provider's usage and allocations in separate calls:
a write that commits between them (a claim, a consumer moving off) must
not show as a usage mismatch (the soak's checker once confirmed such a
finding twice on a busy host), a real mismatch must still show, and a
provider that stays busy must not hold the check up for ever."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest

from rtframework import invariants
from rtframework.placement import types as t
from rtframework.proxy import CallProxy

pytestmark = pytest.mark.placement


class _WritesBetweenReads(CallProxy):
    """Runs ``write`` right after each of the first ``times`` usage reads
    of ``provider``, before its allocations are read."""

    def __init__(self, backend, provider: str, times: int, write: Callable[[], None]) -> None:
        super().__init__(backend)
        self.provider, self.left, self.write, self.writes = provider, times, write, 0

    def get_provider_usages(self, uuid_: str):
        usage = self.wrapped.get_provider_usages(uuid_)
        if uuid_ == self.provider and self.left:
            self.left -= 1
            self.write()
            self.writes += 1
        return usage


def _provider(backend, name: str) -> str:
    made = backend.create_provider(name)
    backend.set_inventories(made.uuid, made.generation, {"VCPU": t.Inventory(total=16)})
    return made.uuid


def _claim(backend, provider: str) -> None:
    backend.put_allocations(str(uuid.uuid4()), {provider: {"VCPU": 1}}, project_id="p",
                            user_id="u", consumer_generation=None)


def _mismatches(snap) -> list:
    return [v for v in invariants.check_snapshot(snap) if v.kind == invariants.USAGE_MISMATCH]


def test_a_claim_between_the_usage_and_the_allocations_is_read_again(fresh_backend, store):
    provider = _provider(fresh_backend, "busy-host")
    racing = _WritesBetweenReads(fresh_backend, provider, 2,
                                 lambda: _claim(fresh_backend, provider))
    snap = invariants.take_snapshot(racing, store)
    assert racing.writes == 2
    assert snap.usages[provider] == {"VCPU": 2}
    assert not _mismatches(snap)


def test_a_consumer_moving_off_between_the_reads_is_read_again(fresh_backend, store):
    """Placement does not bump the generation of the provider a consumer
    moves off, so only comparing the reads can tell."""
    source, dest = _provider(fresh_backend, "source"), _provider(fresh_backend, "dest")
    consumers = [str(uuid.uuid4()) for _ in range(2)]
    for consumer in consumers:
        fresh_backend.put_allocations(consumer, {source: {"VCPU": 2}}, project_id="p",
                                      user_id="u", consumer_generation=None)
    moving = iter(consumers)

    def move_off() -> None:
        consumer = next(moving)
        held = fresh_backend.get_consumer_allocations(consumer)
        fresh_backend.put_allocations(consumer, {dest: {"VCPU": 2}}, project_id="p",
                                      user_id="u", consumer_generation=held.generation)

    racing = _WritesBetweenReads(fresh_backend, source, 2, move_off)
    snap = invariants.take_snapshot(racing, store)
    assert racing.writes == 2
    assert not any(snap.usages[source].values())
    assert not _mismatches(snap)


def test_a_provider_written_on_every_read_keeps_the_last_reads(fresh_backend, store):
    provider = _provider(fresh_backend, "busy-host")
    racing = _WritesBetweenReads(fresh_backend, provider, 100,
                                 lambda: _claim(fresh_backend, provider))
    snap = invariants.take_snapshot(racing, store)
    assert racing.writes == 5  # one per attempt, then the check goes on
    assert _mismatches(snap)  # and reports what its last reads saw
