"""A move interrupted by a crash is finished or undone when a host starts."""

from __future__ import annotations

import pytest

from rtframework.compute import values as v
from rtframework.moves import evacuate, live, migrate, recovery, resize

pytestmark = pytest.mark.placement

F = {"VCPU": 2, "MEMORY_MB": 1024, "DISK_GB": 10}


def reconcile(cloud, label):
    return recovery.reconcile(cloud.ctx, cloud.host(label))


@pytest.fixture(params=["doubled", "migration"])
def two_hosts(request, cloud, config):
    config.config(move_claim_strategy=request.param, group="placement")
    cloud.add_host("a")
    cloud.add_host("b")
    return cloud


def _crash_at(cloud, status):
    vm = cloud.boot("a", F)
    mig = migrate.start(cloud.ctx, vm.uuid, to_host=cloud.host("b"))
    if status != "pre-migrating":
        mig = resize.migrate(cloud.ctx, mig.uuid)
    if status in ("finished", "confirming", "reverting"):
        mig = resize.finish(cloud.ctx, mig.uuid)
    if status in ("confirming", "reverting"):
        # The process died right after recording the step.
        mig = cloud.store.update_migration(mig.uuid, expected_status="finished", status=status)
    return vm, mig


@pytest.mark.parametrize("status", ["pre-migrating", "migrating"])
@pytest.mark.parametrize("host", ["a", "b"])
def test_unfinished_cold_move_rolls_back_to_the_source(two_hosts, status, host):
    vm, mig = _crash_at(two_hosts, status)
    done = reconcile(two_hosts, host)
    assert [(r.old_status, r.new_status) for r in done] == [(status, "error")]
    assert two_hosts.usages() == {"a": F, "b": {}}
    assert two_hosts.allocations(mig.uuid) == {}
    instance = two_hosts.store.get_instance(vm.uuid)
    assert (instance.host, instance.task_state) == (two_hosts.host("a"), None)
    # The other host of the move finds nothing left to do.
    assert reconcile(two_hosts, "b" if host == "a" else "a") == []


def test_verify_resize_is_left_for_the_user(two_hosts):
    vm, mig = _crash_at(two_hosts, "finished")
    before = (two_hosts.allocations(vm.uuid), two_hosts.allocations(mig.uuid))
    assert reconcile(two_hosts, "a") == []
    assert reconcile(two_hosts, "b") == []
    assert (two_hosts.allocations(vm.uuid), two_hosts.allocations(mig.uuid)) == before
    assert two_hosts.store.get_migration(mig.uuid).status == "finished"


def test_interrupted_confirm_is_finished(two_hosts):
    vm, mig = _crash_at(two_hosts, "confirming")
    done = reconcile(two_hosts, "b")
    assert [r.new_status for r in done] == ["confirmed"]
    assert two_hosts.usages() == {"a": {}, "b": F}
    assert two_hosts.store.get_instance(vm.uuid).vm_state == v.ACTIVE


def test_interrupted_revert_is_finished(two_hosts):
    vm, mig = _crash_at(two_hosts, "reverting")
    done = reconcile(two_hosts, "a")
    assert [r.new_status for r in done] == ["reverted"]
    assert two_hosts.usages() == {"a": F, "b": {}}
    instance = two_hosts.store.get_instance(vm.uuid)
    assert (instance.host, instance.vm_state) == (two_hosts.host("a"), v.ACTIVE)


def test_running_live_migration_rolls_back(two_hosts):
    vm = two_hosts.boot("a", F)
    mig = live.start(two_hosts.ctx, vm.uuid, to_host=two_hosts.host("b"))
    assert two_hosts.running("b") == {vm.uuid}  # the destination started the guest
    assert [r.new_status for r in reconcile(two_hosts, "b")] == ["failed"]
    assert two_hosts.usages() == {"a": F, "b": {}}
    assert two_hosts.allocations(mig.uuid) == {}
    # Rolled back: the destination's copy is destroyed, the source's runs on.
    assert (two_hosts.running("a"), two_hosts.running("b")) == ({vm.uuid}, set())


def test_live_migration_whose_guest_switched_is_completed(two_hosts):
    vm = two_hosts.boot("a", F)
    mig = live.start(two_hosts.ctx, vm.uuid, to_host=two_hosts.host("b"))
    # Crash after the instance record moved, before the source half went.
    two_hosts.store.update_instance(vm.uuid, host=two_hosts.host("b"), node=two_hosts.host("b"),
                                    task_state=None)
    assert [r.new_status for r in reconcile(two_hosts, "a")] == ["done"]
    assert two_hosts.usages() == {"a": {}, "b": F}
    assert two_hosts.allocations(mig.uuid) == {}


def test_only_the_evacuated_source_removes_its_half(two_hosts):
    vm = two_hosts.boot("a", F)
    two_hosts.store.set_forced_down(two_hosts.host("a"), True)
    mig = evacuate.evacuate(two_hosts.ctx, vm.uuid, to_host=two_hosts.host("b"))
    assert two_hosts.allocations(vm.uuid) == {"a": F, "b": F}
    # The destination does not own the source half: it leaves it.
    assert reconcile(two_hosts, "b") == []
    assert two_hosts.allocations(vm.uuid) == {"a": F, "b": F}
    two_hosts.store.set_forced_down(two_hosts.host("a"), False)
    done = reconcile(two_hosts, "a")
    assert [(r.migration_uuid, r.new_status) for r in done] == [(mig.uuid, "done")]
    assert two_hosts.usages() == {"a": {}, "b": F}
    assert two_hosts.violations() == []


def test_interrupted_evacuation_rolls_back_when_the_source_returns(two_hosts):
    vm = two_hosts.boot("a", F)
    two_hosts.store.set_forced_down(two_hosts.host("a"), True)
    evacuate.start(two_hosts.ctx, vm.uuid, to_host=two_hosts.host("b"))
    two_hosts.store.set_forced_down(two_hosts.host("a"), False)
    assert [r.new_status for r in reconcile(two_hosts, "a")] == ["error"]
    assert two_hosts.usages() == {"a": F, "b": {}}
    assert two_hosts.store.get_instance(vm.uuid).host == two_hosts.host("a")


@pytest.mark.parametrize("kind", ["migrate", "evacuate"])
def test_a_move_stopped_after_the_instance_moved_is_recorded_finished(two_hosts, kind):
    vm = two_hosts.boot("a", F)
    b = two_hosts.host("b")
    if kind == "migrate":
        mig = resize.migrate(two_hosts.ctx, migrate.start(two_hosts.ctx, vm.uuid, to_host=b).uuid)
        moved = {"vm_state": v.RESIZED}
    else:
        two_hosts.store.set_forced_down(two_hosts.host("a"), True)
        mig = evacuate.start(two_hosts.ctx, vm.uuid, to_host=b)
        mig = two_hosts.store.update_migration(mig.uuid, status="migrating")
        moved = {}
    # The instance record moved, then the process died.
    two_hosts.store.update_instance(vm.uuid, host=b, node=b, task_state=None, **moved)
    done = reconcile(two_hosts, "b")
    assert [(r.old_status, r.new_status) for r in done] == [("migrating", "finished")]
    assert two_hosts.usages() == {"a": F, "b": F}
    assert two_hosts.violations() == []


def test_failure_after_the_record_moved_rolls_the_record_back_too(two_hosts, monkeypatch):
    # finish() moves the instance record to the destination, then records
    # the status; a failure in between (a lost database connection) makes
    # run() roll back. The allocations go back to the source, and so must
    # the record, or the instance would live on b while holding only a.
    vm = two_hosts.boot("a", F)
    real_advance = resize.records.advance

    def advance(ctx, migration, status, *args, **kwargs):
        if status == "finished":
            raise ConnectionError("database went away")
        return real_advance(ctx, migration, status, *args, **kwargs)

    monkeypatch.setattr(resize.records, "advance", advance)
    with pytest.raises(ConnectionError):
        resize.run(two_hosts.ctx, vm.uuid, to_host=two_hosts.host("b"),
                   migration_type="migration")
    monkeypatch.undo()

    instance = two_hosts.store.get_instance(vm.uuid)
    assert (instance.host, instance.vm_state, instance.task_state) == (
        two_hosts.host("a"), v.ACTIVE, None)
    assert two_hosts.usages() == {"a": F, "b": {}}
    for label in ("a", "b"):
        two_hosts.periodic(label)
    assert two_hosts.usages() == {"a": F, "b": {}}
    assert two_hosts.violations() == []


@pytest.mark.parametrize("host", ["a", "b"])
def test_a_rollback_stopped_after_its_claim_step_is_finished_not_recorded_finished(
        two_hosts, monkeypatch, host):
    # finish() moved the instance record to b, then recording "finished"
    # failed (a lost connection), so run() rolled back: the claims went
    # back to a, and the next step (the record back to a) failed too. The
    # record says the instance lives on b, RESIZED, but placement holds only
    # a's half: recovery must finish the rollback, not record the move
    # finished (a FINISHED move holding its source only can neither be
    # confirmed nor reverted cleanly, and its instance holds the old flavor).
    vm = two_hosts.boot("a", F)
    real_advance = resize.records.advance

    def advance(ctx, migration, status, *args, **kwargs):
        if status == "finished":
            raise ConnectionError("database went away")
        return real_advance(ctx, migration, status, *args, **kwargs)

    def restore(*args, **kwargs):
        raise ConnectionError("database went away again")

    monkeypatch.setattr(resize.records, "advance", advance)
    monkeypatch.setattr(resize.undo, "restore_on_source", restore)
    bigger = v.Flavor("bigger", {**F, "VCPU": 4})
    with pytest.raises(ConnectionError):
        resize.run(two_hosts.ctx, vm.uuid, bigger, to_host=two_hosts.host("b"))
    monkeypatch.undo()
    (mig,) = two_hosts.store.list_migrations(instance_uuid=vm.uuid)
    assert mig.status == "migrating"
    assert two_hosts.store.get_instance(vm.uuid).vm_state == v.RESIZED
    assert two_hosts.usages() == {"a": F, "b": {}}

    done = reconcile(two_hosts, host)
    assert [(r.old_status, r.new_status) for r in done] == [("migrating", "error")]
    instance = two_hosts.store.get_instance(vm.uuid)
    assert (instance.host, instance.vm_state, instance.task_state, dict(instance.flavor.resources)
            ) == (two_hosts.host("a"), v.ACTIVE, None, F)
    assert two_hosts.usages() == {"a": F, "b": {}}
    assert two_hosts.violations() == []
