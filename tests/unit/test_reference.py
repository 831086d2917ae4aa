"""The reference model, row by row of its tables (written from the moves
table of the placement facts, not from the claim code)."""

from __future__ import annotations

import pytest

from rtframework import reference as ref

S, D = "src", "dst"
OLD = {"VCPU": 2, "MEMORY_MB": 512}
NEW = {"VCPU": 4, "MEMORY_MB": 512}
SOURCE = ({S: OLD}, {})
DOUBLED = ({S: OLD, D: NEW}, {})
SPLIT = ({D: NEW}, {S: OLD})
DEST = ({D: NEW}, {})


def allowed(kind, strategy, status, dest=D, **kw):
    return [(h.instance, h.migration) for h in ref.in_move(
        kind, strategy, status, source_root=S, dest_root=dest, f_old=OLD, f_new=NEW, **kw)]


@pytest.mark.parametrize("kind,status,doubled,migration", [
    ("resize", "pre-migrating", [SOURCE, DOUBLED], [SOURCE, SPLIT]),
    ("resize", "migrating", [DOUBLED], [SPLIT]),
    ("migration", "finished", [DOUBLED], [SPLIT]),
    ("resize", "confirming", [DOUBLED, DEST], [SPLIT, DEST]),
    ("resize", "reverting", [DOUBLED, SOURCE], [SPLIT, SOURCE]),
    ("live-migration", "accepted", [SOURCE, DOUBLED], [SOURCE, SPLIT]),
    ("live-migration", "running", [DOUBLED], [SPLIT]),
    ("live-migration", "post-migrating", [DOUBLED, DEST], [SPLIT, DEST]),
    # An evacuation's source is down: always both halves on the instance.
    ("evacuation", "accepted", [SOURCE], [SOURCE]),
    ("evacuation", "pre-migrating", [SOURCE, DOUBLED], [SOURCE, DOUBLED]),
    ("evacuation", "finished", [DOUBLED], [DOUBLED]),
])
def test_move_states(kind, status, doubled, migration):
    assert allowed(kind, "doubled", status) == doubled
    assert allowed(kind, "migration", status) == migration


def test_before_a_destination_is_named_only_the_source_is_allowed():
    assert allowed("live-migration", "doubled", "accepted", dest=None) == [SOURCE]
    assert allowed("resize", "doubled", "migrating", dest=None) == []


def test_same_host_resize_doubled_sums_both_flavors_on_one_tree():
    held = ref.in_move("resize", "doubled", "migrating", source_root=S, dest_root=S,
                       f_old=OLD, f_new=NEW)
    assert [(h.instance, h.migration) for h in held] == [
        ({S: {"VCPU": 6, "MEMORY_MB": 1024}}, {})]


@pytest.mark.parametrize("status", ["confirmed", "reverted", "error", "done", "failed",
                                    "cancelled"])
def test_a_finished_record_allows_nothing_of_its_own(status):
    assert allowed("resize", "doubled", status) == []


def test_unknown_kind_or_status_allows_nothing():
    assert allowed("teleport", "doubled", "migrating") == []
    assert allowed("resize", "doubled", "accepted") == []


def test_a_deleted_instance_move_holds_nothing_whatever_the_status():
    assert allowed("resize", "migration", "finished", instance_deleted=True) == [({}, {})]


@pytest.mark.parametrize("vm_state,task,own,expected", [
    ("ACTIVE", None, S, [{S: OLD}]),
    ("RESIZED", None, S, [{S: OLD}]),
    ("ACTIVE", None, None, []),  # a live instance with no known node
    ("ACTIVE", "shelving_offloading", S, [{S: OLD}, {}]),
    ("SHELVED_OFFLOADED", "unshelving", S, [{S: OLD}, {}]),
    ("SHELVED_OFFLOADED", None, None, [{}]),
    ("BUILDING", None, S, [{S: OLD}, {}]),
    ("ERROR", None, S, [{S: OLD}, {}]),
    ("DELETED", None, S, [{}]),
])
def test_at_rest(vm_state, task, own, expected):
    held = ref.at_rest(vm_state, task, own, OLD)
    assert [h.instance for h in held] == expected
    assert all(h.migration == {} for h in held)


def test_nearest_and_by_root():
    assert ref.by_root({"child": {"VGPU": 1}, S: {"VCPU": 2}}, {"child": S, S: S}) == {
        S: {"VGPU": 1, "VCPU": 2}}
    options = ref.in_move("resize", "doubled", "confirming", source_root=S, dest_root=D,
                          f_old=OLD, f_new=NEW)
    assert ref.nearest(options, {D: {"VCPU": 4}}, {}).name == "the destination only"
    assert ref.nearest((), {}, {}) is None


def test_nearest_counts_every_unit_of_difference_on_every_root_and_consumer():
    a = ref.Holding("a", {S: {"VCPU": 2}}, {})
    b = ref.Holding("b", {S: {"VCPU": 2}, D: {"VCPU": 1}}, {D: {"MEMORY_MB": 1}})
    c = ref.Holding("c", {}, {S: {"VCPU": 5}})
    # Held: I {S: 2 VCPU, D: 1 VCPU}, M {}: a is 1 away, b 1 away (M), c 8 away.
    assert ref.nearest([c, a], {S: {"VCPU": 2}, D: {"VCPU": 1}}, {}).name == "a"
    assert ref.nearest([c, b], {S: {"VCPU": 2}, D: {"VCPU": 1}}, {}).name == "b"
    assert ref.nearest([a, c], {}, {S: {"VCPU": 4}}).name == "c"
    assert ref._diff({S: {"VCPU": 2}}, {D: {"VCPU": 3}}) == 5
    assert ref._diff({S: {"VCPU": 2, "MEMORY_MB": 4}}, {S: {"VCPU": 1}}) == 5
    assert ref.add({S: {"VCPU": 0}}, {D: {}}) == {}
