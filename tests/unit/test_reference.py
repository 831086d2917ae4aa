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


# A storage pool P serving both trees with DISK_GB.
P = "pool"
POOL = ref.Pool(P, frozenset({"DISK_GB"}), frozenset({S, D}))
D_OLD = {"VCPU": 2, "DISK_GB": 10}
D_NEW = {"VCPU": 4, "DISK_GB": 30}


def pooled(kind, strategy, status, dest=D, pools=(POOL,)):
    return [(h.instance, h.migration) for h in ref.in_move(
        kind, strategy, status, source_root=S, dest_root=dest, f_old=D_OLD, f_new=D_NEW,
        pools=pools)]


def test_a_class_a_pool_serving_the_tree_has_may_be_held_on_the_pool():
    held = [h.instance for h in ref.at_rest("ACTIVE", None, S, D_OLD, [POOL])]
    assert held == [{S: D_OLD}, {S: {"VCPU": 2}, P: {"DISK_GB": 10}}]
    elsewhere = ref.Pool(P, frozenset({"DISK_GB"}), frozenset({D}))
    assert [h.instance for h in ref.at_rest("ACTIVE", None, S, D_OLD, [elsewhere])] == [
        {S: D_OLD}]
    no_disk = ref.Pool(P, frozenset({"IPV4_ADDRESS"}), frozenset({S}))
    assert [h.instance for h in ref.at_rest("ACTIVE", None, S, D_OLD, [no_disk])] == [
        {S: D_OLD}]


@pytest.mark.parametrize("strategy", ["doubled", "migration"])
def test_a_pool_both_halves_hold_is_held_once_at_the_larger_amount(strategy):
    during = pooled("resize", strategy, "migrating")
    once = {P: {"DISK_GB": 30}}
    if strategy == "doubled":
        assert ({S: {"VCPU": 2}, D: {"VCPU": 4}, **once}, {}) in during
    else:
        assert ({D: {"VCPU": 4}, **once}, {S: {"VCPU": 2}}) in during
    # Twice is never allowed, neither summed nor split between I and M.
    for i, m in during:
        assert i.get(P, {}).get("DISK_GB", 0) + m.get(P, {}).get("DISK_GB", 0) in (0, 10, 30)
        assert P not in m or m[P] == {"DISK_GB": 10} and P not in i


def test_a_pool_only_one_half_holds_counts_like_a_tree():
    during = pooled("resize", "migration", "migrating")
    assert ({D: D_NEW}, {S: {"VCPU": 2}, P: {"DISK_GB": 10}}) in during
    assert ({D: {"VCPU": 4}, P: {"DISK_GB": 30}}, {S: D_OLD}) in during
    assert len(during) == 4  # source and destination each on the tree or the pool


def test_an_evacuation_holds_the_pool_once_on_the_instance():
    during = pooled("evacuation", "migration", "finished")
    assert ({S: {"VCPU": 2}, D: {"VCPU": 4}, P: {"DISK_GB": 30}}, {}) in during
    assert all(m == {} for _, m in during)


def test_a_same_host_resize_on_a_pool_sums_the_tree_and_holds_the_pool_once():
    during = pooled("resize", "doubled", "migrating", dest=S)
    assert ({S: {"VCPU": 6}, P: {"DISK_GB": 30}}, {}) in during
    assert ({S: {"VCPU": 6}, P: {"DISK_GB": 40}}, {}) not in during


def test_confirm_and_revert_states_on_a_pool():
    assert ({D: {"VCPU": 4}, P: {"DISK_GB": 30}}, {}) in pooled("resize", "doubled", "confirming")
    assert ({S: {"VCPU": 2}, P: {"DISK_GB": 10}}, {}) in pooled("resize", "doubled", "reverting")
