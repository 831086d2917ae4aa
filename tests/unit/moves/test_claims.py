"""The two claim strategies over a minimal consumer store.

The store keeps only what the strategies touch (consumer allocations and
generations, all-or-nothing multi-consumer writes), so that races can be
injected between a strategy's read and its write.
"""

from __future__ import annotations

import logging

import pytest

from rtframework.moves import claims, errors
from rtframework.placement import errors as perrors
from rtframework.placement import types as t

S, D = "source-rp", "dest-rp"
INST, MIG = "instance-1", "migration-1"
F_OLD = {"VCPU": 1, "MEMORY_MB": 512}
F_NEW = {"VCPU": 2, "MEMORY_MB": 1024}


class Consumers:
    """Consumer allocations with generations, like placement keeps them."""

    def __init__(self) -> None:
        self.held: dict[str, t.ConsumerAllocations] = {}
        self.writes = 0
        self.before_write = None  # callable run once before the next write

    def get_consumer_allocations(self, uuid):
        return self.held.get(uuid, t.ConsumerAllocations(uuid, {}))

    def write_allocations(self, writes):
        if self.before_write is not None:
            hook, self.before_write = self.before_write, None
            hook()
        for w in writes:
            current = self.get_consumer_allocations(w.consumer_uuid).generation
            if current != w.consumer_generation:
                raise perrors.ConsumerGenerationConflict(
                    f"consumer {w.consumer_uuid}: expected {w.consumer_generation} got {current}")
        self.writes += 1
        for w in writes:
            self.set(w.consumer_uuid, w.allocations)

    def set(self, uuid, allocations):
        allocations = claims.normalized(allocations)
        if not allocations:
            self.held.pop(uuid, None)
            return
        gen = (self.get_consumer_allocations(uuid).generation or 0) + 1
        self.held[uuid] = t.ConsumerAllocations(uuid, allocations, gen, "p", "u")

    def alloc(self, uuid):
        return claims.normalized(self.get_consumer_allocations(uuid).allocations)


def make(strategy, same_host=False):
    store = Consumers()
    store.set(INST, {S: F_OLD})
    dest = S if same_host else D
    move = claims.MoveClaim(INST, MIG, "p", "u", source={S: F_OLD}, dest={dest: F_NEW})
    return store, claims.STRATEGIES[strategy](store, retries=3), move


@pytest.mark.parametrize("same_host", [False, True])
def test_doubled_holds_both_sides_in_the_instance(same_host):
    store, strategy, move = make("doubled", same_host)
    strategy.start(move)
    if same_host:
        assert store.alloc(INST) == {S: {"VCPU": 3, "MEMORY_MB": 1536}}
    else:
        assert store.alloc(INST) == {S: F_OLD, D: F_NEW}
    assert store.alloc(MIG) == {}


@pytest.mark.parametrize("same_host", [False, True])
def test_migration_moves_the_source_to_the_migration_consumer(same_host):
    store, strategy, move = make("migration", same_host)
    strategy.start(move)
    assert store.alloc(MIG) == {S: F_OLD}
    assert store.alloc(INST) == {S if same_host else D: F_NEW}
    assert store.writes == 1  # both consumers in one write


@pytest.mark.parametrize("strategy_name", ["doubled", "migration"])
@pytest.mark.parametrize("same_host", [False, True])
def test_confirm_keeps_only_the_destination_and_twice_is_harmless(strategy_name, same_host):
    store, strategy, move = make(strategy_name, same_host)
    strategy.start(move)
    strategy.confirm(move)
    expected = {S if same_host else D: F_NEW}
    assert (store.alloc(INST), store.alloc(MIG)) == (expected, {})
    writes = store.writes
    strategy.confirm(move)
    assert (store.alloc(INST), store.alloc(MIG), store.writes) == (expected, {}, writes)


@pytest.mark.parametrize("strategy_name", ["doubled", "migration"])
@pytest.mark.parametrize("same_host", [False, True])
def test_revert_keeps_only_the_source(strategy_name, same_host):
    store, strategy, move = make(strategy_name, same_host)
    strategy.start(move)
    strategy.revert(move)
    assert (store.alloc(INST), store.alloc(MIG)) == ({S: F_OLD}, {})
    strategy.revert(move)
    assert (store.alloc(INST), store.alloc(MIG)) == ({S: F_OLD}, {})


@pytest.mark.parametrize("strategy_name", ["doubled", "migration"])
def test_revert_after_confirm_is_an_error_that_changes_nothing(strategy_name):
    store, strategy, move = make(strategy_name)
    strategy.start(move)
    strategy.confirm(move)
    writes = store.writes
    with pytest.raises(errors.AlreadyConfirmed, match=MIG):
        strategy.revert(move)
    assert (store.alloc(INST), store.writes) == ({D: F_NEW}, writes)


@pytest.mark.parametrize("strategy_name", ["doubled", "migration"])
def test_confirm_after_revert_is_an_error(strategy_name):
    store, strategy, move = make(strategy_name)
    strategy.start(move)
    strategy.revert(move)
    with pytest.raises(errors.AlreadyReverted):
        strategy.confirm(move)
    assert store.alloc(INST) == {S: F_OLD}


@pytest.mark.parametrize("strategy_name", ["doubled", "migration"])
def test_drop_instance_removes_instance_and_migration_consumer(strategy_name):
    store, strategy, move = make(strategy_name)
    strategy.start(move)
    strategy.drop_instance(move)
    assert store.held == {}


@pytest.mark.parametrize("strategy_name", ["doubled", "migration"])
def test_rollback_never_recreates_a_deleted_instance(strategy_name):
    store, strategy, move = make(strategy_name)
    strategy.start(move)
    # The instance is deleted between the rollback's read and its write.
    store.before_write = lambda: store.set(INST, {})
    strategy.revert(move)
    assert store.held == {}


@pytest.mark.parametrize("strategy_name", ["doubled", "migration"])
def test_confirm_losing_a_race_to_a_delete_does_not_leak_the_migration(strategy_name):
    store, strategy, move = make(strategy_name)
    strategy.start(move)
    store.before_write = lambda: store.set(INST, {})
    strategy.confirm(move)
    assert store.held == {}


def test_confirm_losing_a_generation_race_rereads_and_removes_the_migration():
    store, strategy, move = make("migration")
    strategy.start(move)
    # Someone bumps the migration consumer's generation (same content).
    store.before_write = lambda: store.set(MIG, {S: F_OLD})
    strategy.confirm(move)
    assert (store.alloc(INST), store.alloc(MIG)) == ({D: F_NEW}, {})


def test_start_refuses_allocations_it_does_not_recognise():
    store, strategy, move = make("doubled")
    store.set(INST, {S: {"VCPU": 7}})
    with pytest.raises(errors.UnexpectedAllocations, match="VCPU"):
        strategy.start(move)
    assert store.alloc(INST) == {S: {"VCPU": 7}}


@pytest.mark.parametrize("strategy_name", ["doubled", "migration"])
def test_start_of_a_deleted_instance_is_instance_gone(strategy_name):
    store, strategy, move = make(strategy_name)
    store.set(INST, {})
    with pytest.raises(errors.InstanceGone):
        strategy.start(move)
    assert store.held == {}


def test_every_change_is_logged_with_consumer_provider_and_reason(caplog):
    store, strategy, move = make("migration")
    with caplog.at_level(logging.INFO, logger="rtframework.moves.claims"):
        strategy.start(move, reason="cold migrate m1")
    lines = [r.getMessage() for r in caplog.records]
    assert any(MIG in line and S in line and "cold migrate m1" in line for line in lines)
    assert any(INST in line and D in line and "cold migrate m1" in line for line in lines)


def test_unknown_strategy_names_the_known_ones(conf):
    with pytest.raises(errors.MoveError, match="doubled, migration"):
        claims.strategy("tripled", Consumers(), conf)


@pytest.mark.parametrize("step", ["confirm", "revert"])
@pytest.mark.parametrize("strategy_name", ["doubled", "migration"])
def test_a_step_refuses_allocations_it_does_not_recognise(strategy_name, step):
    store, strategy, move = make(strategy_name)
    store.set(INST, {D: {"VCPU": 7}, S: F_OLD})
    writes = store.writes
    if strategy_name == "migration":
        # Without a migration consumer the instance's holding is the
        # destination's business: nothing is written, nothing refused.
        getattr(strategy, step)(move)
    else:
        with pytest.raises(errors.UnexpectedAllocations) as caught:
            getattr(strategy, step)(move)
        assert str(caught.value) == (
            f"cannot {step} the move of instance {INST} (migration {MIG}): instance holds "
            f"{ {D: {'VCPU': 7}, S: F_OLD} }, migration consumer holds {{}}; expected source "
            f"{ {S: F_OLD} } and destination { {D: F_NEW} }")
    assert (store.alloc(INST), store.writes) == ({D: {"VCPU": 7}, S: F_OLD}, writes)


@pytest.mark.parametrize("step,kept", [("confirm", {D: F_NEW}), ("revert", {S: F_OLD})])
def test_doubled_removes_a_leftover_migration_consumer_once_the_instance_is_one_sided(
        step, kept):
    store, strategy, move = make("doubled")
    store.set(INST, kept)
    store.set(MIG, {S: F_OLD})
    generation = store.held[INST].generation
    getattr(strategy, step)(move)
    assert (store.alloc(INST), store.alloc(MIG)) == (kept, {})
    assert store.held[INST].generation == generation  # the instance was not rewritten


@pytest.mark.parametrize("step", ["confirm", "revert"])
@pytest.mark.parametrize("strategy_name", ["doubled", "migration"])
def test_a_step_of_a_deleted_instance_writes_nothing(strategy_name, step):
    store, strategy, move = make(strategy_name)
    store.set(INST, {})
    getattr(strategy, step)(move)
    assert (store.held, store.writes) == ({}, 0)


@pytest.mark.parametrize("strategy_name", ["doubled", "migration"])
def test_confirm_of_a_reverted_move_names_what_the_instance_holds(strategy_name):
    store, strategy, move = make(strategy_name)
    with pytest.raises(errors.AlreadyReverted) as caught:
        strategy.confirm(move)
    assert str(caught.value) == (
        f"migration {MIG} was reverted: instance {INST} holds only its source {({S: F_OLD})}")


@pytest.mark.parametrize("strategy_name", ["doubled", "migration"])
def test_revert_of_a_confirmed_move_names_what_the_instance_holds(strategy_name):
    store, strategy, move = make(strategy_name)
    store.set(INST, {D: F_NEW})
    with pytest.raises(errors.AlreadyConfirmed) as caught:
        strategy.revert(move)
    assert str(caught.value) == (
        f"migration {MIG} was confirmed: instance {INST} holds only its destination "
        f"{({D: F_NEW})}")


class _Diary:
    """A history recorder's store: the changes noted, as written."""

    def __init__(self) -> None:
        self.rows: list[tuple] = []

    def add_allocation_changes(self, changes, *, who, why):
        self.rows += [(*change, who, why) for change in changes]


def test_migration_start_writes_each_consumer_as_itself_and_logs_every_change(caplog):
    """The instance keeps its own project and user and its generation; the
    migration consumer is created (generation None) with the move's; each
    has its consumer type; every changed provider share is logged and
    recorded with the step's reason."""
    store, strategy, move = make("migration")
    move = claims.MoveClaim(INST, MIG, "move-project", "move-user",
                            source={S: F_OLD}, dest={D: F_NEW})
    sent: list[t.AllocationWrite] = []
    write = store.write_allocations
    store.write_allocations = lambda writes: (sent.extend(writes), write(writes))
    diary = _Diary()
    caplog.set_level(logging.INFO, logger=claims.LOG.name)
    with claims.history.recording(diary, "host-a"):
        strategy.start(move, reason="resize start")
    assert sorted(sent, key=lambda w: w.consumer_uuid) == [
        t.AllocationWrite(consumer_uuid=INST, allocations={D: F_NEW}, project_id="p",
                          user_id="u", consumer_generation=1, consumer_type=claims.INSTANCE),
        t.AllocationWrite(consumer_uuid=MIG, allocations={S: F_OLD}, project_id="move-project",
                          user_id="move-user", consumer_generation=None,
                          consumer_type=claims.MIGRATION),
    ]
    logged = sorted(r.getMessage() for r in caplog.records if r.name == claims.LOG.name)
    assert logged == sorted([
        f"allocation of consumer {INST} on provider {D}: {{}} -> {F_NEW} (resize start)",
        f"allocation of consumer {INST} on provider {S}: {F_OLD} -> {{}} (resize start)",
        f"allocation of consumer {MIG} on provider {S}: {{}} -> {F_OLD} (resize start)",
    ])
    assert sorted(diary.rows) == sorted([
        (INST, D, {}, F_NEW, "host-a", "resize start"),
        (INST, S, F_OLD, {}, "host-a", "resize start"),
        (MIG, S, {}, F_OLD, "host-a", "resize start"),
    ])


def test_a_step_with_nothing_to_change_writes_nothing(caplog):
    store, strategy, move = make("migration")
    strategy.start(move)
    writes = store.writes
    caplog.set_level(logging.DEBUG, logger=claims.LOG.name)
    strategy.start(move, reason="again")
    assert store.writes == writes
    assert f"again of instance {INST}: nothing to change" in caplog.text
