"""Moves that cannot be done say why, in one line, and change nothing."""

from __future__ import annotations

import pytest

from rtframework import scheduler
from rtframework.compute import values as v
from rtframework.moves import errors, evacuate, live, migrate, resize

pytestmark = pytest.mark.placement

F = {"VCPU": 2, "MEMORY_MB": 1024, "DISK_GB": 10}


@pytest.fixture
def two(cloud):
    cloud.add_host("a")
    cloud.add_host("b")
    return cloud


def unchanged(cloud, vm, b_used=None):
    instance = cloud.store.get_instance(vm.uuid)
    assert (cloud.label(instance.host), instance.vm_state, instance.task_state) == (
        "a", v.ACTIVE, None)
    assert cloud.allocations(vm.uuid) == {"a": F}
    assert cloud.usages()["b"] == (b_used or {})


def test_migrate_to_its_own_host(two):
    vm = two.boot("a", F)
    with pytest.raises(errors.MoveError, match="already"):
        migrate.migrate(two.ctx, vm.uuid, to_host=two.host("a"))
    unchanged(two, vm)
    assert two.store.list_migrations(instance_uuid=vm.uuid) == []


def test_migrate_to_an_unknown_host(two):
    vm = two.boot("a", F)
    with pytest.raises(errors.MoveError, match="reports no compute node"):
        migrate.migrate(two.ctx, vm.uuid, to_host="nowhere")
    unchanged(two, vm)


def test_resize_to_the_flavor_it_has(two):
    vm = two.boot("a", F)
    with pytest.raises(errors.MoveError, match="already"):
        resize.run(two.ctx, vm.uuid, v.Flavor("same", F))
    unchanged(two, vm)


def test_evacuate_from_a_host_that_is_up(two):
    vm = two.boot("a", F)
    with pytest.raises(errors.MoveError, match="is up"):
        evacuate.evacuate(two.ctx, vm.uuid)
    unchanged(two, vm)


def test_no_room_anywhere_is_no_valid_host(two):
    vm = two.boot("a", F)
    with pytest.raises(scheduler.NoValidHost):
        resize.run(two.ctx, vm.uuid, v.Flavor("huge", {"VCPU": 64, "MEMORY_MB": 1024}))
    unchanged(two, vm)
    [mig] = two.store.list_migrations(instance_uuid=vm.uuid)
    assert mig.status == "error"
    assert two.allocations(mig.uuid) == {}


def test_a_named_host_without_room_is_no_valid_host(two):
    two.boot("b", {"VCPU": 1, "MEMORY_MB": 8192, "DISK_GB": 10}, name="filler")
    vm = two.boot("a", F)
    with pytest.raises(scheduler.NoValidHost):
        live.start(two.ctx, vm.uuid, to_host=two.host("b"))
    unchanged(two, vm, {"VCPU": 1, "MEMORY_MB": 8192, "DISK_GB": 10})
    # A live migration that found no room ends failed, as in Nova.
    [mig] = two.store.list_migrations(instance_uuid=vm.uuid)
    assert (mig.migration_type, mig.status) == ("live-migration", "failed")
    assert two.allocations(mig.uuid) == {}


def test_a_busy_instance_cannot_start_a_second_move(two):
    vm = two.boot("a", F)
    migrate.start(two.ctx, vm.uuid, to_host=two.host("b"))
    with pytest.raises(errors.ConcurrentUpdate, match="busy"):
        live.start(two.ctx, vm.uuid, to_host=two.host("b"))
    assert len(two.store.list_migrations(instance_uuid=vm.uuid)) == 1


def test_confirm_of_a_rolled_back_move_is_refused(two):
    vm = two.boot("a", F)
    mig = migrate.start(two.ctx, vm.uuid, to_host=two.host("b"))
    resize.rollback(two.ctx, mig.uuid, reason="test")
    with pytest.raises(errors.InvalidTransition, match="'error'"):
        resize.confirm(two.ctx, mig.uuid)
    assert two.allocations(vm.uuid) == {"a": F}


def test_a_finished_live_migration_cannot_be_rolled_back(two):
    vm = two.boot("a", F)
    mig = live.start(two.ctx, vm.uuid, to_host=two.host("b"))
    live.complete(two.ctx, mig.uuid)
    with pytest.raises(errors.AlreadyConfirmed):
        live.rollback(two.ctx, mig.uuid, abort=True)
    assert two.usages() == {"a": {}, "b": F}


def test_the_scheduler_picks_the_freest_host_and_never_the_source(cloud):
    for label in ("a", "b", "c"):
        cloud.add_host(label)
    cloud.boot("b", {"VCPU": 4, "MEMORY_MB": 4096, "DISK_GB": 10}, name="filler")
    vm = cloud.boot("a", F)
    mig = migrate.migrate(cloud.ctx, vm.uuid)
    assert cloud.label(mig.dest_host) == "c"


def test_a_candidate_lost_to_a_race_makes_way_for_the_next(cloud, monkeypatch):
    for label in ("a", "b", "c"):
        cloud.add_host(label)
    vm = cloud.boot("a", F)
    real = scheduler.candidates
    thief = {"VCPU": 8, "MEMORY_MB": 8192, "DISK_GB": 100}

    def racing(backend, resources, **kw):
        found = real(backend, resources, **kw)
        # Another claim fills the best candidate between the query and our
        # claim (a shared Placement may offer other tests' providers too).
        ours = {cloud.root(label): label for label in cloud.trackers}
        best = next(c for c in found if c.root_uuid in ours)
        cloud.boot(ours[best.root_uuid], thief, name="thief")
        return found

    monkeypatch.setattr(scheduler, "candidates", racing)
    mig = migrate.migrate(cloud.ctx, vm.uuid)
    assert mig.status == "finished"
    assert cloud.label(mig.dest_host) != "a"
    full = [label for label, used in cloud.usages().items() if used == thief]
    assert full and cloud.label(mig.dest_host) not in full
