"""A sharing provider that is not a root: the sql backend serves the trees
of its aggregate from it, as from a root. (Real Placement answers such a
request with a 500 error, so this is not a contract test.)"""

from __future__ import annotations

import uuid

from rtframework.placement import types as t


def test_a_sharing_provider_below_a_root_serves_its_aggregate(backend, make_provider):
    agg = str(uuid.uuid4())
    compute = make_provider({"VCPU": 8}, aggregates=[agg]).uuid
    storage = make_provider().uuid
    pool = make_provider({"DISK_GB": 100}, parent=storage, traits=[t.SHARING_TRAIT],
                         aggregates=[agg]).uuid
    for limit in (None, 1):
        got = backend.get_allocation_candidates(t.CandidateQuery(
            resources={"VCPU": 1, "DISK_GB": 10}, member_of=(frozenset({agg}),), limit=limit))
        assert [dict(r.allocations) for r in got.allocation_requests] == [
            {compute: {"VCPU": 1}, pool: {"DISK_GB": 10}}]
        assert got.provider_summaries[pool].root_uuid == storage
    got = backend.get_allocation_candidates(t.CandidateQuery(
        resources={"DISK_GB": 10}, in_tree=storage))
    assert [dict(r.allocations) for r in got.allocation_requests] == [{pool: {"DISK_GB": 10}}]
