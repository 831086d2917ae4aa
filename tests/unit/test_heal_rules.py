"""heal_rules.decide, row by row of its table."""

from __future__ import annotations

import datetime

import pytest

from rtframework import heal_rules as hr
from rtframework.compute import values as v

NOW = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
FLAVOR = v.Flavor("f", {"VCPU": 1})


def inst(host="h1", vm_state=v.ACTIVE, task_state=None):
    return v.Instance("i", "vm", "p", "u", FLAVOR, host, host, vm_state, task_state, NOW, NOW)


def mig(status):
    return v.Migration("m", "i", "resize", status, "h1", "h1", "h2", "h2", FLAVOR, FLAVOR,
                       "migration", NOW, NOW)


@pytest.mark.parametrize("instance,migration,in_move,nodes,action,finding", [
    (None, mig("migrating"), False, 1, hr.KEEP, None),
    (None, mig("finished"), False, 1, hr.KEEP, None),
    (None, mig("confirmed"), False, 1, hr.KEEP, hr.STALE_MIGRATION),
    (None, None, False, 1, hr.KEEP, hr.UNKNOWN_CONSUMER),
    (inst(vm_state=v.DELETED, task_state="rebuilding"), None, True, 1, hr.KEEP, None),
    (inst(vm_state=v.DELETED), None, True, 2, hr.KEEP, None),
    (inst(host="h2", vm_state=v.DELETED), None, False, 1, hr.KEEP, None),
    (inst(host=None, vm_state=v.SHELVED_OFFLOADED), None, False, 1, hr.KEEP, hr.UNOWNED),
    (inst(vm_state=v.DELETED), None, False, 1, hr.REMOVE, None),
    (inst(vm_state=v.SHELVED_OFFLOADED), None, False, 2, hr.REMOVE, None),
    (inst(vm_state=v.ACTIVE), None, False, 2, hr.KEEP, hr.MULTI_NODE),
    (inst(vm_state=v.ERROR), None, False, 1, hr.KEEP, None),
], ids=["unfinished migration", "resize awaiting confirm", "finished migration", "unknown",
        "moving by task_state", "moving by migration", "owned elsewhere", "owned by nobody",
        "owned+DELETED", "owned+SHELVED_OFFLOADED", "active on two nodes", "owned+ERROR"])
def test_decide(instance, migration, in_move, nodes, action, finding):
    decision = hr.decide("h1", instance, migration, in_move, nodes)
    assert (decision.action, decision.finding) == (action, finding)
    assert decision.reason
