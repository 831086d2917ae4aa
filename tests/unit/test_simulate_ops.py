"""How a soak operation's end is told: a kind and a detail, never a string parsed back."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from rtframework.moves import errors as merrors
from rtframework.simulate import ops


@pytest.mark.parametrize("raised,expected", [
    (None, ops.Outcome(ops.OK)),
    (merrors.MoveError("no"), ops.Outcome(ops.REFUSED, "MoveError")),
    (sa.exc.OperationalError("SELECT 1", {}, Exception("gone")),
     ops.Outcome(ops.FAULT, "OperationalError")),
    (KeyError("x"), ops.Outcome(ops.ERROR, "KeyError: 'x'")),
])
def test_execute_tells_how_an_operation_ended(monkeypatch, raised, expected):
    def run(op, env):
        if raised is not None:
            raise raised

    monkeypatch.setattr(ops, "_run", run)
    outcome = ops.execute(ops.Op(1, ops.BOOT, "h1"), env=None)
    assert outcome == expected
    assert str(outcome) == expected.kind + (f": {expected.detail}" if expected.detail else "")
    assert outcome.kind in ops.OUTCOME_KINDS
