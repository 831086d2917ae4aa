"""Candidates and writes never disagree: a provider is a candidate for an
amount exactly when a new consumer's claim of that amount is accepted
(capacity with reserved and ratio, min_unit, max_unit, step_size, and a
provider already over capacity after its inventory shrank)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from rtframework.placement import errors
from rtframework.placement import types as t

pytestmark = pytest.mark.placement


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
# Ratios single precision cannot hold, at the amount where its product and
# double precision's fall on either side (MariaDB stores FLOAT).
@example(total=375, reserved=0, ratio=0.568, min_unit=1, max_unit=1000, step=1, used=0,
         amount=213)
@example(total=250, reserved=0, ratio=4.004, min_unit=1, max_unit=2000, step=1, used=0,
         amount=1001)
@given(total=st.integers(1, 32), reserved=st.integers(0, 8),
       ratio=st.sampled_from([0.5, 1.0, 1.5, 4.0]), min_unit=st.integers(1, 3),
       max_unit=st.integers(1, 40), step=st.integers(1, 3), used=st.integers(0, 40),
       amount=st.integers(1, 48))
def test_a_candidate_is_exactly_a_claim_that_is_accepted(
        backend, make_provider, claim, total, reserved, ratio, min_unit, max_unit, step, used,
        amount):
    assume(reserved <= total and min_unit <= max_unit)
    # Usage first, then the inventory under test: it may leave the provider
    # over capacity, as a shrunk inventory does.
    rp = make_provider({"VCPU": 1000})
    if used:
        claim({rp.uuid: {"VCPU": used}})
    backend.set_inventories(rp.uuid, backend.get_inventories(rp.uuid).generation, {
        "VCPU": t.Inventory(total=total, reserved=reserved, min_unit=min_unit,
                            max_unit=max_unit, step_size=step, allocation_ratio=ratio)})
    found = backend.get_allocation_candidates(
        t.CandidateQuery(resources={"VCPU": amount}, in_tree=rp.uuid)).allocation_requests
    try:
        claim({rp.uuid: {"VCPU": amount}})
        accepted = True
    except (errors.CapacityExceeded, errors.InvalidAllocation):
        accepted = False
    assert bool(found) == accepted
    assert backend.get_provider_usages(rp.uuid)["VCPU"] == used + (amount if accepted else 0)
