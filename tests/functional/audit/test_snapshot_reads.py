"""A check reads each provider's usage and allocations in separate calls:
a claim that commits between them must not show as a usage mismatch (the
soak's checker once confirmed such a finding twice on a busy host), and
a provider that stays busy must not hold the check up for ever."""

from __future__ import annotations

import uuid

import pytest

from rtframework import invariants
from rtframework.placement import types as t
from rtframework.proxy import CallProxy

pytestmark = pytest.mark.placement


class _ClaimsBetweenReads(CallProxy):
    """Commits one more claim on ``provider`` right after each of the first
    ``times`` usage reads, before its allocations are read."""

    def __init__(self, backend, provider: str, times: int) -> None:
        super().__init__(backend)
        self.provider, self.left, self.claimed = provider, times, 0

    def get_provider_usages(self, uuid_: str):
        usage = self.wrapped.get_provider_usages(uuid_)
        if uuid_ == self.provider and self.left:
            self.left -= 1
            self.wrapped.put_allocations(str(uuid.uuid4()), {uuid_: {"VCPU": 1}},
                                         project_id="p", user_id="u",
                                         consumer_generation=None)
            self.claimed += 1
        return usage


def _provider(backend) -> str:
    made = backend.create_provider("busy-host")
    backend.set_inventories(made.uuid, made.generation, {"VCPU": t.Inventory(total=16)})
    return made.uuid


def test_a_claim_between_the_usage_and_the_allocations_is_read_again(fresh_backend, store):
    provider = _provider(fresh_backend)
    racing = _ClaimsBetweenReads(fresh_backend, provider, times=2)
    snap = invariants.take_snapshot(racing, store)
    assert racing.claimed == 2
    assert snap.usages[provider] == {"VCPU": 2}
    assert sum(a[provider]["VCPU"] for a in snap.held.values() if provider in a) == 2
    assert not [v for v in invariants.check_snapshot(snap)
                if v.kind == invariants.USAGE_MISMATCH]


def test_a_provider_written_on_every_read_keeps_the_last_reads(fresh_backend, store):
    provider = _provider(fresh_backend)
    racing = _ClaimsBetweenReads(fresh_backend, provider, times=100)
    invariants.take_snapshot(racing, store)
    assert racing.claimed == 5  # one per attempt, then the check goes on
