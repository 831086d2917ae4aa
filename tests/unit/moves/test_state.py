"""Allowed transitions of a migration's status."""

import pytest

from rtframework.moves import errors, state


@pytest.mark.parametrize("kind", [state.COLD, state.RESIZE])
def test_cold_moves_wait_for_confirm_or_revert(kind):
    assert {status: state.allowed(kind, status) for status in state.TRANSITIONS[kind]} == {
        state.PRE_MIGRATING: {state.MIGRATING, state.ERROR},
        state.MIGRATING: {state.FINISHED, state.ERROR},
        state.FINISHED: {state.CONFIRMING, state.REVERTING, state.ERROR},
        state.CONFIRMING: {state.CONFIRMED, state.ERROR},
        state.REVERTING: {state.REVERTED, state.ERROR},
    }
    assert state.INITIAL[kind] == state.PRE_MIGRATING
    with pytest.raises(errors.InvalidTransition, match="'migrating'.*'confirming'"):
        state.check("m", kind, state.MIGRATING, state.CONFIRMING)


def test_a_confirmed_move_cannot_be_reverted():
    with pytest.raises(errors.InvalidTransition, match="'confirmed'.*none \\(final\\)"):
        state.check("m1", state.RESIZE, state.CONFIRMED, state.REVERTING)


def test_live_migration_ends_by_itself():
    state.check("m", state.LIVE, state.ACCEPTED, state.RUNNING)
    for end in (state.DONE, state.FAILED, state.CANCELLED):
        state.check("m", state.LIVE, state.RUNNING, end)
    with pytest.raises(errors.InvalidTransition):
        state.check("m", state.LIVE, state.RUNNING, state.FINISHED)


def test_every_unfinished_status_can_fail_into_error():
    for kind, table in state.TRANSITIONS.items():
        for status in table:
            state.check("m", kind, status, state.ERROR)
            assert not state.is_final(status)


def test_unknown_kind_is_named():
    with pytest.raises(errors.MoveError, match="teleport"):
        state.allowed("teleport", state.ACCEPTED)


def test_the_records_the_transitions_and_the_reference_model_name_the_same_statuses():
    # A status no transition reaches is dead: neither the records nor the
    # reference model (which judges the moves) may know one.
    from rtframework import reference
    from rtframework.compute import values

    reached = {s for table in state.TRANSITIONS.values()
               for status, nexts in table.items() for s in {status, *nexts}}
    assert set(values.MIGRATION_STATUSES) == reached
    for kind, table in state.TRANSITIONS.items():
        assert set(reference.MOVE_TABLE[kind]) == set(table), kind
