"""A host that was killed mid-operation settles its instance records when it
starts again: boots, shelve offloads, unshelves, move starts."""

from __future__ import annotations

import pytest

from rtframework import instance_recovery
from rtframework.compute import values as v
from rtframework.moves.context import MoveContext
from rtframework.tracker import TrackerError
from tests.fixtures.crash import Crash, Steps
from tests.functional.tracker.conftest import SMALL, boot, usage

pytestmark = pytest.mark.placement


def held(rt, uuid):
    return rt.backend.wrapped.get_consumer_allocations(uuid).allocations


def restart(rt, make_tracker):
    """The host's agent starts again: a new tracker over the same hypervisor
    (the fake driver's guests survive the agent, as real guests do)."""
    again = make_tracker(rt.host)
    again.driver = rt.driver
    ctx = MoveContext(again.conf, again.backend, again.compute, {again.host: again.driver})
    return again, instance_recovery.recover_host(again, ctx)


def killed(rt, call, at):
    steps = Steps([rt.compute, rt.backend.wrapped, rt.driver], at=at)
    try:
        with pytest.raises(Crash):
            call()
    finally:
        steps.remove()


def record(rt, uuid):
    i = rt.compute.get_instance(uuid)
    return i.vm_state, i.task_state, i.host


@pytest.mark.parametrize("at", [1, 2, 3])  # created, claimed, guest started
def test_killed_boot_ends_in_error_holding_nothing(tracker, make_tracker, at):
    killed(tracker, lambda: boot(tracker), at)
    (inst,) = tracker.compute.list_instances()
    assert inst.vm_state == v.BUILDING
    again, done = restart(tracker, make_tracker)
    assert [r.action for r in done.instances] == ["error"]
    assert record(again, inst.uuid) == (v.ERROR, None, "h1")
    assert held(again, inst.uuid) == {}
    assert again.driver.list_instances() == []
    assert usage(again) == {}


@pytest.mark.parametrize("at", [1, 2, 3, 4])  # taken, destroyed, marked, released
def test_killed_shelve_offload_ends_shelved_holding_nothing(tracker, make_tracker, at):
    inst = boot(tracker)
    killed(tracker, lambda: tracker.shelve_offload(inst.uuid), at)
    again, done = restart(tracker, make_tracker)
    assert [r.action for r in done.instances] == ["finish shelve"]
    assert record(again, inst.uuid) == (v.SHELVED_OFFLOADED, None, None)
    assert held(again, inst.uuid) == {}
    assert again.driver.list_instances() == []


@pytest.mark.parametrize("at,ends", [
    (1, v.SHELVED_OFFLOADED),  # taken, nothing claimed yet
    (2, v.ACTIVE),  # claimed
    (3, v.ACTIVE),  # node recorded
    (4, v.ACTIVE),  # guest started
])
def test_killed_unshelve_ends_active_or_shelved(tracker, make_tracker, at, ends):
    inst = boot(tracker)
    tracker.shelve_offload(inst.uuid)
    other = make_tracker("h2")
    other.update_available_resource()
    killed(other, lambda: other.unshelve(inst.uuid), at)
    again, _ = restart(other, make_tracker)
    if ends == v.ACTIVE:
        assert record(again, inst.uuid) == (v.ACTIVE, None, "h2")
        assert usage(again) == dict(SMALL.resources)
        assert again.driver.list_instances() == [inst.uuid]
    else:
        assert record(again, inst.uuid) == (v.SHELVED_OFFLOADED, None, None)
        assert held(again, inst.uuid) == {}
        assert again.driver.list_instances() == []
    assert usage(tracker) == {}


def test_a_move_start_killed_before_its_migration_record_is_undone(tracker, make_tracker):
    inst = boot(tracker)
    # begin() took the instance, then died before writing the migration.
    tracker.compute.update_instance(inst.uuid, expected_task_state=None,
                                    task_state="resize_prep")
    again, done = restart(tracker, make_tracker)
    assert [(r.action, r.before) for r in done.instances] == [("clear task",
                                                               "ACTIVE/resize_prep")]
    assert record(again, inst.uuid) == (v.ACTIVE, None, "h1")
    assert usage(again) == dict(SMALL.resources)


def test_an_error_instance_holding_a_claim_is_released(tracker, make_tracker):
    inst = boot(tracker)
    # A recovery that marked a killed boot ERROR and was killed itself.
    tracker.compute.update_instance(inst.uuid, vm_state=v.ERROR)
    again, done = restart(tracker, make_tracker)
    assert [r.action for r in done.instances] == ["release"]
    assert held(again, inst.uuid) == {} and record(again, inst.uuid)[0] == v.ERROR


def test_a_settled_host_has_nothing_to_recover(tracker, make_tracker):
    boot(tracker, "a")
    tracker.shelve_offload(boot(tracker, "b").uuid)
    _, done = restart(tracker, make_tracker)
    assert not done


def test_refused_unshelve_gives_a_leftover_claim_back_to_its_host(tracker, make_tracker):
    inst = boot(tracker)
    # A shelve offload killed after marking the record, before its release.
    killed(tracker, lambda: tracker.shelve_offload(inst.uuid), 3)
    assert record(tracker, inst.uuid) == (v.SHELVED_OFFLOADED, None, "h1")
    other = make_tracker("h2")
    other.update_available_resource()
    with pytest.raises(TrackerError, match="already holds allocations"):
        other.unshelve(inst.uuid)
    # Still h1's: its heal removes the claim (owned by nobody, nobody could).
    assert record(tracker, inst.uuid) == (v.SHELVED_OFFLOADED, None, "h1")
    tracker.update_available_resource()
    assert held(tracker, inst.uuid) == {}
    assert other.unshelve(inst.uuid).host == "h2"
    assert usage(other) == dict(SMALL.resources) and usage(tracker) == {}


def test_restart_destroys_guests_the_records_place_elsewhere(tracker, make_tracker):
    here = boot(tracker, "here")
    gone = boot(tracker, "gone")
    tracker.delete(gone.uuid)
    tracker.driver.instances[gone.uuid] = tracker.instance_spec(gone)  # left running
    elsewhere = boot(tracker, "elsewhere")
    tracker.compute.update_instance(elsewhere.uuid, host="h2", node="h2")
    tracker.driver.instances["not-ours"] = tracker.instance_spec(here)  # no record
    again, done = restart(tracker, make_tracker)
    assert sorted(r.instance_uuid for r in done.strays) == sorted([gone.uuid, elsewhere.uuid])
    assert sorted(again.driver.list_instances()) == sorted([here.uuid, "not-ours"])


def test_killed_unshelve_whose_guest_cannot_start_on_restart_is_undone(tracker, make_tracker):
    """The claim was made before the kill; on restart the hypervisor
    refuses the guest: the instance goes back to shelved, holding nothing."""
    inst = boot(tracker)
    tracker.shelve_offload(inst.uuid)
    other = make_tracker("h2")
    other.update_available_resource()
    killed(other, lambda: other.unshelve(inst.uuid), 2)
    assert held(other, inst.uuid) != {}
    other.driver.fail_spawn = lambda spec: spec.uuid == inst.uuid
    again, done = restart(other, make_tracker)
    assert [(r.instance_uuid, r.action, r.after) for r in done.instances] == [
        (inst.uuid, "finish unshelve", f"{v.SHELVED_OFFLOADED}/-")]
    assert record(again, inst.uuid) == (v.SHELVED_OFFLOADED, None, None)
    assert held(again, inst.uuid) == {}
    assert again.driver.list_instances() == []
    assert usage(again) == {}


def test_killed_unshelve_on_a_host_with_a_storage_pool_is_finished(conf, config, make_tracker):
    """The claim holds the disk on the shared pool, outside the node's own
    tree: it is still the flavor on this host, so the unshelve is finished
    (not undone)."""
    import uuid as uuidlib

    from rtframework import sharing
    from rtframework.placement import types as t

    aggregate = str(uuidlib.uuid4())
    config.config(shared_storage_aggregate=aggregate, group="fake_driver")
    first = make_tracker("h1")
    pool = sharing.ensure_pool(first.backend.wrapped, f"pool-{aggregate[:8]}", aggregate,
                               {"DISK_GB": t.Inventory(total=100)})
    first.update_available_resource()
    inst = boot(first)
    first.shelve_offload(inst.uuid)
    other = make_tracker("h2")
    other.update_available_resource()
    killed(other, lambda: other.unshelve(inst.uuid), 2)
    assert pool in held(other, inst.uuid)
    again, done = restart(other, make_tracker)
    assert [(r.instance_uuid, r.action) for r in done.instances] == [
        (inst.uuid, "finish unshelve")]
    assert record(again, inst.uuid) == (v.ACTIVE, None, "h2")
    assert held(again, inst.uuid)[pool] == {"DISK_GB": 10}
    assert again.driver.list_instances() == [inst.uuid]
