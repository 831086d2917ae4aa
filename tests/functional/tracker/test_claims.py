"""Boot, delete, shelve offload, unshelve: what the claims leave behind."""

from __future__ import annotations

import pytest

from rtframework.compute import errors as cerrors
from rtframework.compute import values as v
from rtframework.compute.values import Flavor
from rtframework.moves.errors import PreconditionFailed
from rtframework.tracker import (
    BootFailed,
    InvalidFlavor,
    InvalidInstanceState,
    NoCapacity,
    NotOwned,
    UnknownNode,
)
from tests.functional.tracker.conftest import SMALL, boot, usage

pytestmark = pytest.mark.placement


def held(rt, instance_uuid):
    return rt.backend.wrapped.get_consumer_allocations(instance_uuid).allocations


def test_boot_claims_spawns_and_marks_active(tracker, caplog):
    with caplog.at_level("INFO", logger="rtframework.tracker"):
        inst = boot(tracker)
    assert inst.vm_state == v.ACTIVE and inst.host == "h1" and inst.node == "h1"
    assert usage(tracker) == dict(SMALL.resources)
    assert tracker.driver.list_instances() == [inst.uuid]
    assert any("claimed" in r.getMessage() and inst.uuid in r.getMessage()
               and "boot" in r.getMessage() for r in caplog.records)


def test_boot_with_nested_child_resource(make_tracker, config):
    config.config(child_resource_class="CUSTOM_FPGA", child_total=1, group="fake_driver")
    rt = make_tracker("h1")
    rt.update_available_resource()
    inst = boot(rt, flavor=Flavor("fpga", {"VCPU": 1, "CUSTOM_FPGA": 1}))
    by_name = {p: rt.backend.wrapped.get_provider(p).name for p in held(rt, inst.uuid)}
    assert sorted(by_name.values()) == ["h1", "h1_CUSTOM_FPGA"]
    with pytest.raises(NoCapacity):
        boot(rt, "second", flavor=Flavor("fpga", {"VCPU": 1, "CUSTOM_FPGA": 1}))


def test_no_capacity_leaves_nothing_behind(tracker):
    boot(tracker, "a", Flavor("big", {"VCPU": 8, "MEMORY_MB": 6000}))
    with pytest.raises(NoCapacity, match=r"node h1 of host h1 cannot hold .*MEMORY_MB=4000.*"
                                         r"MEMORY_MB 2192 free of 8192"):
        boot(tracker, "b", Flavor("big", {"VCPU": 1, "MEMORY_MB": 4000}))
    assert [i.name for i in tracker.compute.list_instances()] == ["a"]
    assert usage(tracker) == {"VCPU": 8, "MEMORY_MB": 6000}
    assert len(tracker.driver.list_instances()) == 1


def test_no_capacity_names_max_unit(tracker):
    with pytest.raises(NoCapacity, match="VCPU=9 exceeds max_unit 8"):
        boot(tracker, "b", Flavor("wide", {"VCPU": 9}))


def test_boot_before_the_node_is_reported_says_so(make_tracker):
    rt = make_tracker("h1")
    with pytest.raises(PreconditionFailed, match="not in placement yet"):
        boot(rt)
    assert rt.compute.list_instances() == []


def test_failed_spawn_removes_the_claim_and_marks_error(tracker):
    tracker.driver.fail_spawn = lambda spec: True
    with pytest.raises(BootFailed, match="its claim was removed"):
        boot(tracker, "doomed")
    (inst,) = tracker.compute.list_instances()
    assert inst.vm_state == v.ERROR
    assert held(tracker, inst.uuid) == {}
    assert usage(tracker) == {}


@pytest.mark.parametrize("resources,match", [
    ({}, "asks for no resources"),
    ({"VCPUS": 1}, "invalid resource class 'VCPUS'"),
    ({"VCPU": 0}, "VCPU amount must be an integer from 1"),
])
def test_bad_flavor_is_refused_before_anything_is_written(tracker, resources, match):
    with pytest.raises(InvalidFlavor, match=match):
        boot(tracker, flavor=Flavor("bad", resources))
    assert tracker.compute.list_instances() == []


def test_delete_destroys_marks_and_releases(tracker):
    inst = boot(tracker)
    deleted = tracker.delete(inst.name)
    assert deleted.vm_state == v.DELETED and deleted.host == "h1"
    assert held(tracker, inst.uuid) == {}
    assert tracker.driver.list_instances() == []
    with pytest.raises(InvalidInstanceState, match="already deleted"):
        tracker.delete(inst.uuid)


def test_delete_mid_move_removes_the_migration_consumer_too(tracker, make_tracker):
    inst = boot(tracker)
    mig = tracker.compute.create_migration(
        inst.uuid, "migration", source_host="h1", source_node="h1", dest_host="h2",
        dest_node="h2", old_flavor=SMALL, status="migrating")
    b = tracker.backend.wrapped
    # The move holds the source with the migration consumer.
    current = b.get_consumer_allocations(inst.uuid)
    b.write_allocations([
        _write(mig.uuid, current.allocations, None),
        _write(inst.uuid, {}, current.generation),
    ])
    tracker.delete(inst.uuid)
    assert held(tracker, mig.uuid) == {}
    assert tracker.compute.get_migration(mig.uuid).status == "error"
    assert usage(tracker) == {}


def _write(consumer, allocations, generation):
    from rtframework.placement.types import AllocationWrite

    return AllocationWrite(consumer, allocations, "proj", "user", generation)


def test_another_hosts_instance_is_refused(tracker, make_tracker):
    other = make_tracker("h2")
    other.update_available_resource()
    inst = boot(other)
    with pytest.raises(NotOwned, match="on host h2, not h1"):
        tracker.delete(inst.uuid)
    with pytest.raises(NotOwned):
        tracker.shelve_offload(inst.uuid)
    assert tracker.compute.get_instance(inst.uuid).vm_state == v.ACTIVE


def test_shelve_offload_then_unshelve_elsewhere(tracker, make_tracker):
    inst = boot(tracker)
    shelved = tracker.shelve_offload(inst.uuid)
    assert (shelved.vm_state, shelved.host, shelved.node) == (v.SHELVED_OFFLOADED, None, None)
    assert held(tracker, inst.uuid) == {}
    assert tracker.driver.list_instances() == []
    other = make_tracker("h2")
    other.update_available_resource()
    back = other.unshelve(inst.uuid)
    assert (back.vm_state, back.host, back.task_state) == (v.ACTIVE, "h2", None)
    assert usage(other) == dict(SMALL.resources)
    assert usage(tracker) == {}
    with pytest.raises(InvalidInstanceState, match="only a SHELVED_OFFLOADED"):
        tracker.unshelve(inst.uuid)


def test_unshelve_without_room_stays_shelved(tracker):
    inst = boot(tracker)
    tracker.shelve_offload(inst.uuid)
    for n in range(4):
        boot(tracker, f"filler{n}", Flavor("all", {"VCPU": 8}))
    with pytest.raises(NoCapacity):
        tracker.unshelve(inst.uuid)
    again = tracker.compute.get_instance(inst.uuid)
    assert (again.vm_state, again.host, again.task_state) == (v.SHELVED_OFFLOADED, None, None)
    assert held(tracker, inst.uuid) == {}


def test_failed_unshelve_spawn_stays_shelved_without_claim(tracker):
    inst = boot(tracker)
    tracker.shelve_offload(inst.uuid)
    tracker.driver.fail_spawn = lambda spec: True
    with pytest.raises(BootFailed):
        tracker.unshelve(inst.uuid)
    again = tracker.compute.get_instance(inst.uuid)
    assert (again.vm_state, again.host) == (v.SHELVED_OFFLOADED, None)
    assert held(tracker, inst.uuid) == {}


def test_periodic_after_claims_heals_nothing_and_goes_quiet(tracker):
    keep = boot(tracker, "keep")
    gone = boot(tracker, "gone")
    tracker.delete(gone.uuid)
    report = tracker.update_available_resource()[0]
    assert report.healed == () and report.findings == ()
    assert usage(tracker) == dict(SMALL.resources)
    tracker.stats.reset()
    tracker.update_available_resource()
    assert (tracker.stats.writes, tracker.stats.reads) == (0, 1)
    assert held(tracker, keep.uuid)


def test_unknown_instance_reference(tracker):
    with pytest.raises(cerrors.InstanceNotFound):
        tracker.delete("nope")


def test_periodic_after_a_boot_reads_only_the_new_consumer(tracker, monkeypatch):
    for n in range(3):
        boot(tracker, f"old{n}", Flavor("tiny", {"VCPU": 1}))
    tracker.update_available_resource()
    new = boot(tracker, "new", Flavor("tiny", {"VCPU": 1}))
    tracker.stats.reset()
    asked: list[list[str]] = []
    backend = tracker.backend.wrapped
    real = backend.get_consumers_allocations
    monkeypatch.setattr(backend, "get_consumers_allocations",
                        lambda uuids: asked.append(list(uuids)) or real(uuids))
    tracker.update_available_resource()
    assert tracker.stats.writes == 0, tracker.stats.by_method
    assert tracker.stats.by_method["get_consumers_allocations"] == 1, tracker.stats.by_method
    assert "get_consumer_allocations" not in tracker.stats.by_method
    assert asked == [[new.uuid]]


def test_a_fresh_tracker_reads_every_consumer_in_one_call(tracker, make_tracker):
    for n in range(3):
        boot(tracker, f"vm{n}", Flavor("tiny", {"VCPU": 1}))
    tracker.update_available_resource()
    fresh = make_tracker(tracker.host)
    fresh.update_available_resource()
    assert fresh.stats.by_method["get_consumers_allocations"] == 1, fresh.stats.by_method
    assert "get_consumer_allocations" not in fresh.stats.by_method


def test_delete_while_building_wins(tracker, make_tracker):
    other = make_tracker("h1")  # the same host, another process

    def delete_meanwhile(spec):
        other.delete(spec.uuid)
        return False

    tracker.driver.fail_spawn = delete_meanwhile
    with pytest.raises(cerrors.StateConflict):
        boot(tracker, "racy")
    (inst,) = tracker.compute.list_instances()
    assert inst.vm_state == v.DELETED
    assert held(tracker, inst.uuid) == {}
    assert tracker.driver.list_instances() == []


def test_delete_while_shelving_wins(tracker, make_tracker, monkeypatch):
    inst = boot(tracker)
    other = make_tracker("h1")
    destroy = tracker.driver.destroy

    def delete_meanwhile(spec):
        destroy(spec)
        other.delete(spec.uuid)

    monkeypatch.setattr(tracker.driver, "destroy", delete_meanwhile)
    with pytest.raises(cerrors.StateConflict):
        tracker.shelve_offload(inst.uuid)
    again = tracker.compute.get_instance(inst.uuid)
    assert again.vm_state == v.DELETED
    assert held(tracker, inst.uuid) == {}


def test_full_child_is_named_in_the_refusal(make_tracker, config):
    config.config(child_resource_class="CUSTOM_FPGA", child_total=1, group="fake_driver")
    rt = make_tracker("h1")
    rt.update_available_resource()
    boot(rt, flavor=Flavor("fpga", {"VCPU": 1, "CUSTOM_FPGA": 1}))
    with pytest.raises(NoCapacity, match=r"cannot hold CUSTOM_FPGA=1, VCPU=2 "
                                         r"\(h1_CUSTOM_FPGA is full for CUSTOM_FPGA=1: "
                                         r"0 free of 1; .*provider h1: .*VCPU 31 free of 32"):
        boot(rt, "second", flavor=Flavor("fpga", {"VCPU": 2, "CUSTOM_FPGA": 1}))


def test_class_no_provider_offers_is_named_in_the_refusal(tracker):
    with pytest.raises(NoCapacity, match="no provider of the tree offers CUSTOM_FPGA"):
        boot(tracker, flavor=Flavor("fpga", {"VCPU": 2, "CUSTOM_FPGA": 1}))
    assert tracker.compute.list_instances() == []


def test_boot_on_a_node_the_host_does_not_have_names_its_nodes(tracker):
    with pytest.raises(UnknownNode) as exc:
        boot(tracker, node="h9")
    assert str(exc.value) == "host h1 has no node 'h9'; it has h1"
    assert tracker.compute.list_instances() == []
    assert usage(tracker) == {}


def test_shelve_of_a_shelved_or_deleted_instance_is_refused(tracker):
    inst = boot(tracker)
    tracker.shelve_offload(inst.uuid)
    tracker.unshelve(inst.uuid)
    tracker.compute.update_instance(inst.uuid, task_state="resize_prep")
    with pytest.raises(InvalidInstanceState) as exc:
        tracker.shelve_offload(inst.uuid)
    assert str(exc.value) == (f"instance {inst.uuid} is {v.ACTIVE} (task resize_prep); only an "
                              "ACTIVE idle instance can be shelved")
    assert held(tracker, inst.uuid) != {}
    tracker.compute.update_instance(inst.uuid, task_state=None)
    tracker.delete(inst.uuid)
    with pytest.raises(InvalidInstanceState, match=f"^instance {inst.uuid} is already deleted$"):
        tracker.delete(inst.uuid)
