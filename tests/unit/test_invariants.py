"""Each invariant against hand-made snapshots (no database)."""

from __future__ import annotations

import dataclasses
import datetime

import pytest

from rtframework import invariants as inv
from rtframework import reference
from rtframework.compute import values as v
from rtframework.placement.types import Inventory

NOW = datetime.datetime(2026, 12, 2, tzinfo=datetime.timezone.utc)
S, D = "root-s", "root-d"
F = v.Flavor("f", {"VCPU": 2, "MEMORY_MB": 512})
G = v.Flavor("g", {"VCPU": 4, "MEMORY_MB": 512})


def instance(uuid="i1", *, host="hs", vm_state=v.ACTIVE, task_state=None, flavor=F):
    return v.Instance(uuid, uuid, "p", "u", flavor, host, host, vm_state, task_state, NOW, NOW)


def migration(uuid="m1", *, status="migrating", strategy="migration", old=F, new=G,
              dest="hd", kind="resize"):
    return v.Migration(uuid, "i1", kind, status, "hs", "hs", dest, dest, old, new, strategy,
                       NOW, NOW)


def snapshot(instances=(), migrations=(), held=None, usages=None, vcpus=8):
    held = held or {}
    sums: dict = {}
    for alloc in held.values():
        for provider, resources in alloc.items():
            for rc, n in resources.items():
                sums.setdefault(provider, {}).setdefault(rc, 0)
                sums[provider][rc] += n
    inventory = {"VCPU": Inventory(vcpus), "MEMORY_MB": Inventory(4096)}
    return inv.Snapshot(
        instances={i.uuid: i for i in instances},
        migrations={m.uuid: m for m in migrations},
        node_roots={("hs", "hs"): S, ("hd", "hd"): D},
        root_of={S: S, D: D},
        names={S: "hs", D: "hd"},
        inventories={S: inventory, D: inventory},
        usages=usages if usages is not None else sums,
        held=held,
    )


def kinds(snap):
    return sorted((f.kind, f.consumer_uuid, f.provider_uuid) for f in inv.check_snapshot(snap))


def test_an_active_instance_holding_its_flavor_at_home_is_fine():
    assert kinds(snapshot([instance()], held={"i1": {S: dict(F.resources)}})) == []


def test_active_instance_holding_nothing_is_missing():
    assert kinds(snapshot([instance()])) == [("missing_allocation", "i1", S)]


def test_active_instance_holding_the_wrong_amount():
    found = inv.check_snapshot(snapshot([instance()], held={"i1": {S: {"VCPU": 1}}}))
    assert [f.kind for f in found] == ["wrong_allocation"]
    assert "{'VCPU': 1}" in found[0].detail and "'VCPU': 2" in found[0].detail


def test_resting_instance_holding_on_another_host_is_multi_host():
    held = {"i1": {S: dict(F.resources), D: dict(F.resources)}}
    assert kinds(snapshot([instance()], held=held)) == [("multi_host_allocation", "i1", D)]


@pytest.mark.parametrize("strategy,held", [
    ("migration", {"m1": {S: dict(F.resources)}, "i1": {D: dict(G.resources)}}),
    ("doubled", {"i1": {S: dict(F.resources), D: dict(G.resources)}}),
])
def test_a_move_holding_as_its_strategy_says_is_fine(strategy, held):
    snap = snapshot([instance(task_state="resize_migrating")],
                    [migration(strategy=strategy)], held=held)
    assert kinds(snap) == []


def test_a_move_missing_its_source_half():
    snap = snapshot([instance(task_state="resize_migrating")], [migration()],
                    held={"i1": {D: dict(G.resources)}})
    assert kinds(snap) == [("missing_move_claim", "m1", S)]


def test_a_move_between_writes_may_hold_either_side_but_nothing_else():
    other = "root-x"
    snap = snapshot([instance(task_state="resize_prep")], [migration(status="pre-migrating")],
                    held={"i1": {S: dict(F.resources)}})
    assert kinds(snap) == []
    snap = snapshot([instance(task_state="resize_prep")], [migration(status="pre-migrating")],
                    held={"i1": {S: dict(F.resources)}, "m1": {other: {"VCPU": 1}}})
    assert kinds(snap) == [("unexpected_move_claim", "m1", other)]


def test_over_capacity_names_provider_and_numbers():
    found = inv.check_snapshot(snapshot(
        [instance(flavor=v.Flavor("big", {"VCPU": 9}))], held={"i1": {S: {"VCPU": 9}}}))
    assert [(f.kind, f.provider_uuid) for f in found] == [("over_capacity", S)]
    assert "uses 9 VCPU of capacity 8" in found[0].detail


@pytest.mark.parametrize("state,kind", [(v.DELETED, "deleted_instance_holds"),
                                        (v.SHELVED_OFFLOADED, "shelved_instance_holds")])
def test_gone_instances_hold_nothing(state, kind):
    snap = snapshot([instance(vm_state=state)], held={"i1": {S: dict(F.resources)}})
    assert kinds(snap) == [(kind, "i1", None)]


def test_orphans_and_leaked_migration_consumers():
    snap = snapshot([instance()], [migration(status="confirmed")],
                    held={"i1": {S: dict(F.resources)}, "m1": {S: {"VCPU": 1}},
                          "nobody": {D: {"VCPU": 1}}})
    assert kinds(snap) == [("leaked_migration_consumer", "m1", None),
                           ("orphan", "nobody", None)]


def test_usage_that_is_not_the_sum_of_allocations():
    snap = snapshot([instance()], held={"i1": {S: dict(F.resources)}},
                    usages={S: {"VCPU": 3, "MEMORY_MB": 512}})
    assert kinds(snap) == [("usage_mismatch", None, S)]


def test_check_reports_only_what_a_second_pass_confirms(monkeypatch):
    transient = snapshot([instance()])  # mid-boot: record ACTIVE, claim not read yet
    settled = snapshot([instance()], held={"i1": {S: dict(F.resources)}})
    passes = iter([transient, settled])
    monkeypatch.setattr(inv, "take_snapshot", lambda backend, store, **_: next(passes))
    assert inv.check(None, None, recheck_delay=0) == []
    stuck = iter([transient, transient])
    monkeypatch.setattr(inv, "take_snapshot", lambda backend, store, **_: next(stuck))
    assert [f.kind for f in inv.check(None, None, recheck_delay=0)] == ["missing_allocation"]


def test_an_unfinished_migration_of_a_deleted_instance_holds_nothing():
    snap = snapshot([instance(vm_state=v.DELETED)], [migration(status="finished")],
                    held={"m1": {S: dict(F.resources)}})
    found = inv.check_snapshot(snap)
    assert [(f.kind, f.consumer_uuid) for f in found] == [("leaked_migration_consumer", "m1")]
    assert "its instance is deleted" in found[0].detail


def _at(snap, seconds_later):
    return dataclasses.replace(snap, read_at=NOW + datetime.timedelta(seconds=seconds_later))


@pytest.mark.parametrize("vm_state,task,what", [
    (v.BUILDING, None, "boot"),
    (v.ACTIVE, "shelving_offloading", "shelving_offloading"),
])
def test_an_operation_left_for_stale_after_seconds_is_interrupted(vm_state, task, what):
    held = {"i1": {S: dict(F.resources)}}
    snap = snapshot([instance(vm_state=vm_state, task_state=task)], held=held)
    assert kinds(_at(snap, 59.9)) == []
    found = inv.check_snapshot(_at(snap, 60))
    assert [(f.kind, f.consumer_uuid, f.provider_uuid) for f in found] == [
        ("interrupted_operation", "i1", None)]
    assert found[0].detail == (
        f"instance i1 (i1) on host hs is {vm_state} (task {task}) with no migration since "
        f"{NOW.isoformat(timespec='seconds')}: its {what} was interrupted")
    assert inv.check_snapshot(_at(snap, 100), stale_after=200) == []


def test_idle_deleted_or_moving_instances_are_not_interrupted():
    held = {"i1": {S: dict(F.resources)}}
    assert kinds(_at(snapshot([instance()], held=held), 3600)) == []
    assert kinds(_at(snapshot([instance(vm_state=v.DELETED, task_state="deleting")]),
                     3600)) == []
    moving = snapshot([instance(task_state="resize_migrating")], [migration(strategy="doubled")],
                      held={"i1": {S: dict(F.resources), D: dict(G.resources)}})
    assert kinds(_at(moving, 3600)) == []


@pytest.mark.parametrize("status,reported", [("accepted", True), ("pre-migrating", True),
                                             ("migrating", False)])
def test_a_move_stuck_before_its_claim_is_interrupted(status, reported):
    held = {"i1": {S: dict(F.resources)}}
    snap = snapshot([instance(task_state="migrating")],
                    [migration(status=status, kind="live-migration", new=F)], held=held)
    found = [f for f in inv.check_snapshot(_at(snap, 61)) if f.kind == "interrupted_operation"]
    if not reported:
        assert found == []
        return
    assert [(f.consumer_uuid, f.detail) for f in found] == [(
        "i1", f"live-migration m1 from host hs has been {status} since "
        f"{NOW.isoformat(timespec='seconds')}: its start was interrupted")]


def test_without_a_read_time_nothing_is_judged_stale():
    snap = snapshot([instance(vm_state=v.BUILDING)])
    assert snap.read_at is None and kinds(snap) == []


def test_finding_details_name_the_numbers():
    found = inv.check_snapshot(snapshot([instance()]))
    assert [f.detail for f in found] == [
        "ACTIVE instance i1 (i1) on hs/hs holds nothing there; its flavor f needs "
        "{root-s: MEMORY_MB=512, VCPU=2}"]
    found = inv.check_snapshot(snapshot([instance()], held={"i1": {S: {"VCPU": 1}}}))
    assert [f.detail for f in found] == [
        "ACTIVE instance i1 (i1) holds {'VCPU': 1} on its node hs/hs; its flavor f is "
        "{'VCPU': 2, 'MEMORY_MB': 512}"]
    found = inv.check_snapshot(snapshot(
        [instance(task_state="resize_migrating")], [migration()],
        held={"i1": {D: dict(G.resources)}}))
    assert [f.detail for f in found] == [
        "resize m1 of instance i1 is migrating (migration): consumer m1 should hold "
        "{'VCPU': 2, 'MEMORY_MB': 512} on provider root-s but holds {} "
        "(allowed: source on the migration, destination on the instance)"]
    found = inv.check_snapshot(snapshot([instance()], held={"i1": dict.fromkeys(
        [S, D], dict(F.resources))}))
    assert [f.detail for f in found] == [
        "ACTIVE instance i1 (i1) of hs/hs is not moving but holds "
        "{root-d: MEMORY_MB=512, VCPU=2} outside its own node's tree"]
    found = inv.check_snapshot(snapshot([instance()], held={"i1": {S: dict(F.resources)}},
                                        usages={S: {"VCPU": 3, "MEMORY_MB": 512}}))
    assert [f.detail for f in found] == [
        "provider hs (root-s) reports usage {'VCPU': 3, 'MEMORY_MB': 512} but its consumers' "
        "allocations add up to {'VCPU': 2, 'MEMORY_MB': 512}"]
    found = inv.check_snapshot(snapshot([instance()], held={"i1": {S: dict(F.resources)},
                                                            "x": {S: {"VCPU": 1}}}))
    assert "consumer x is neither an instance nor a migration and holds {root-s: VCPU=1}" in [
        f.detail for f in found]


def _read(snap, seconds_after):
    return dataclasses.replace(snap, read_at=NOW + datetime.timedelta(seconds=seconds_after))


@pytest.mark.parametrize("record", [
    instance(vm_state=v.BUILDING),
    instance(task_state="resize_prep"),
    instance(vm_state=v.SHELVED_OFFLOADED, task_state="unshelving"),
], ids=["boot", "move start without its record", "unshelve"])
def test_an_operation_left_unchanged_too_long_is_interrupted(record):
    snap = snapshot([record])
    assert "interrupted_operation" not in [f.kind for f in inv.check_snapshot(_read(snap, 59))]
    found = [f for f in inv.check_snapshot(_read(snap, 60)) if f.kind == "interrupted_operation"]
    assert [f.consumer_uuid for f in found] == ["i1"]
    assert inv.check_snapshot(_read(snap, 0), stale_after=0) == inv.check_snapshot(
        _read(snap, 60))


def test_a_move_start_left_unchanged_too_long_is_interrupted():
    snap = snapshot([instance(task_state="resize_prep")],
                    [migration(status="pre-migrating")], held={"i1": {S: dict(F.resources)}})
    assert inv.check_snapshot(_read(snap, 1)) == []
    assert kinds(_read(snap, 61)) == [("interrupted_operation", "i1", None)]
    settled = snapshot([instance()], [migration(status="confirmed")],
                       held={"i1": {S: dict(F.resources)}})
    assert inv.check_snapshot(_read(settled, 3600)) == []


def test_the_soak_monitor_leaves_only_findings_about_a_restarting_host_aside():
    from rtframework.simulate.monitor import Monitor

    wrong = snapshot([instance(host="hs")], held={})  # missing_allocation of i1 on hs
    down: set = set()
    monitor = Monitor(lambda: wrong, recheck_delay=0, restarts=lambda: ({}, down))
    assert [f.kind for f in monitor.check_once()] == ["missing_allocation"]
    down.add("hs")
    assert monitor.check_once() == []
    assert monitor.transient == {"missing_allocation": 1}
    down.clear()
    down.add("hd")  # another host's restart excuses nothing here
    assert [f.kind for f in monitor.check_once()] == ["missing_allocation"]


POOL = "pool"
DISKY = v.Flavor("d", {"VCPU": 2, "DISK_GB": 10})


def pooled_snapshot(instances, migrations=(), held=None, serves=(S, D)):
    snap = snapshot(instances, migrations, held)
    return dataclasses.replace(
        snap, root_of={**snap.root_of, POOL: POOL},
        inventories={**snap.inventories, POOL: {"DISK_GB": Inventory(100)}},
        pools=(reference.Pool(POOL, frozenset({"DISK_GB"}), frozenset(serves)),))


def test_a_disk_on_a_pool_serving_the_node_is_the_instance_own():
    held = {"i1": {S: {"VCPU": 2}, POOL: {"DISK_GB": 10}}}
    assert kinds(pooled_snapshot([instance(flavor=DISKY)], held=held)) == []


def test_a_disk_on_a_pool_not_serving_the_node_is_outside_it():
    held = {"i1": {S: {"VCPU": 2}, POOL: {"DISK_GB": 10}}}
    found = kinds(pooled_snapshot([instance(flavor=DISKY)], held=held, serves=(D,)))
    assert found == [("multi_host_allocation", "i1", POOL), ("wrong_allocation", "i1", S)]


def test_a_wrong_amount_on_the_pool_is_wrong():
    held = {"i1": {S: {"VCPU": 2}, POOL: {"DISK_GB": 20}}}
    found = inv.check_snapshot(pooled_snapshot([instance(flavor=DISKY)], held=held))
    assert [(f.kind, f.provider_uuid) for f in found] == [("wrong_allocation", S)]
    assert "'DISK_GB': 20" in found[0].detail and "storage pools" in found[0].detail


def test_a_move_holding_the_pool_twice_is_found():
    big = v.Flavor("e", {"VCPU": 4, "DISK_GB": 10})
    move = [migration(strategy="migration", old=DISKY, new=big)]
    once = {"i1": {D: {"VCPU": 4}, POOL: {"DISK_GB": 10}}, "m1": {S: {"VCPU": 2}}}
    vm = [instance(flavor=DISKY, task_state="resize_migrating")]
    assert kinds(pooled_snapshot(vm, move, held=once)) == []
    twice = {"i1": once["i1"], "m1": {S: {"VCPU": 2}, POOL: {"DISK_GB": 10}}}
    assert kinds(pooled_snapshot(vm, move, held=twice)) == [
        ("unexpected_move_claim", "m1", POOL)]
