"""Ranking candidates and claiming the next one on a lost race."""

from __future__ import annotations

import pytest

from rtframework import scheduler
from rtframework.placement import errors as perrors
from rtframework.placement import types as t


class Answer:
    """A backend that answers one candidates query."""

    def __init__(self, used_by_root):
        self.used = used_by_root
        self.queries = []

    def get_allocation_candidates(self, query):
        self.queries.append(query)
        requests = tuple(t.AllocationRequest({root: dict(query.resources)}) for root in self.used)
        summaries = {
            root: t.ProviderSummary(root, root, None, {"VCPU": t.ResourceSummary(10, used)},
                                    frozenset())
            for root, used in self.used.items()
        }
        return t.AllocationCandidates(requests, summaries)


def test_most_room_left_first_then_uuid():
    backend = Answer({"rp-c": 2, "rp-a": 5, "rp-b": 2})
    found = scheduler.candidates(backend, {"VCPU": 1, "DISK_GB": 0})
    assert [c.root_uuid for c in found] == ["rp-b", "rp-c", "rp-a"]
    assert found[0].free_share == pytest.approx(0.7)
    # Zero amounts are not asked for.
    assert dict(backend.queries[0].resources) == {"VCPU": 1}


def test_excluded_roots_are_never_offered():
    found = scheduler.candidates(Answer({"src": 0, "other": 9}), {"VCPU": 1},
                                 exclude_roots={"src"})
    assert [c.root_uuid for c in found] == ["other"]


def test_a_lost_race_moves_on_and_other_errors_propagate():
    found = scheduler.candidates(Answer({"rp-a": 0, "rp-b": 1}), {"VCPU": 1})
    tried = []

    def claim(candidate):
        tried.append(candidate.root_uuid)
        if candidate.root_uuid == "rp-a":
            raise perrors.CapacityExceeded("rp-a is full now")
        return "claimed"

    assert scheduler.claim_first(found, claim, "move")[1] == "claimed"
    assert tried == ["rp-a", "rp-b"]

    def broken(candidate):
        raise perrors.InvalidAllocation("bad amount")

    with pytest.raises(perrors.InvalidAllocation):
        scheduler.claim_first(found, broken, "move")


def test_no_valid_host_says_what_each_candidate_said():
    found = scheduler.candidates(Answer({"rp-a": 0}), {"VCPU": 1})

    def lose(candidate):
        raise perrors.ConsumerGenerationConflict("expected 1 but got 2")

    with pytest.raises(scheduler.NoValidHost, match="rp-a: expected 1 but got 2"):
        scheduler.claim_first(found, lose, "migration of vm")
    with pytest.raises(scheduler.NoValidHost, match="no host has room"):
        scheduler.claim_first([], lose, "migration of vm")


def test_a_candidate_with_a_sharing_provider_is_for_the_compute_tree():
    summaries = {
        "pool": t.ProviderSummary("pool", "pool", None, {},
                                  frozenset({"MISC_SHARES_VIA_AGGREGATE"})),
        "node": t.ProviderSummary("node", "node", None, {}, frozenset()),
    }
    request = t.AllocationRequest({"node": {"VCPU": 1}, "pool": {"DISK_GB": 1}})
    assert scheduler._root_of(request, summaries) == "node"
