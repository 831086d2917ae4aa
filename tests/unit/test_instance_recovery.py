"""instance_recovery.decide, row by row of its table."""

from __future__ import annotations

import datetime

import pytest

from rtframework import instance_recovery as ir
from rtframework.compute import values as v

NOW = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)


def inst(vm_state, task_state=None):
    return v.Instance("i", "vm", "p", "u", v.Flavor("f", {"VCPU": 1}), "h1", "h1", vm_state,
                      task_state, NOW, NOW)


@pytest.mark.parametrize("instance,in_move,holds,holds_flavor,action", [
    (inst(v.ACTIVE, "resize_prep"), True, True, True, ir.LEAVE),
    (inst(v.DELETED), False, True, False, ir.LEAVE),
    (inst(v.BUILDING), False, True, True, ir.ERROR),
    (inst(v.BUILDING), False, False, False, ir.ERROR),
    (inst(v.ERROR), False, True, True, ir.RELEASE),
    (inst(v.ERROR), False, False, False, ir.LEAVE),
    (inst(v.ACTIVE, ir.SHELVING), False, True, True, ir.FINISH_SHELVE),
    (inst(v.SHELVED_OFFLOADED), False, True, True, ir.FINISH_SHELVE),
    (inst(v.SHELVED_OFFLOADED, ir.UNSHELVING), False, True, True, ir.FINISH_UNSHELVE),
    (inst(v.SHELVED_OFFLOADED, ir.UNSHELVING), False, True, False, ir.UNDO_UNSHELVE),
    (inst(v.SHELVED_OFFLOADED, ir.UNSHELVING), False, False, False, ir.UNDO_UNSHELVE),
    (inst(v.ACTIVE, "resize_prep"), False, True, True, ir.CLEAR_TASK),
    (inst(v.ACTIVE, "migrating"), False, True, True, ir.CLEAR_TASK),
    (inst(v.ACTIVE), False, True, True, ir.LEAVE),
    (inst(v.RESIZED), False, True, True, ir.LEAVE),
], ids=["moving", "deleted", "killed boot, claimed", "killed boot, nothing claimed",
        "error holding", "error holding nothing", "shelving", "shelved with its host",
        "unshelving, claimed", "unshelving, wrong claim", "unshelving, nothing claimed",
        "move start without record", "live start without record", "active idle",
        "resized idle"])
def test_decide(instance, in_move, holds, holds_flavor, action):
    assert ir.decide(instance, in_move, holds, holds_flavor) == action
