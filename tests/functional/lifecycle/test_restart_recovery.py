"""A host that comes back looks at where the instance lives now: it
removes the source half of an evacuation (and its own copy of the guest)
only for an instance that lives elsewhere."""

from __future__ import annotations

import pytest

from rtframework.moves import evacuate, migrate, recovery, resize

pytestmark = pytest.mark.placement

F = {"VCPU": 2, "MEMORY_MB": 1024, "DISK_GB": 10}


@pytest.fixture
def two(cloud):
    cloud.add_host("a")
    cloud.add_host("b")
    return cloud


def test_the_returning_source_removes_its_half_of_an_instance_living_elsewhere(two):
    vm = two.boot("a", F)
    two.store.set_forced_down(two.host("a"), True)
    mig = evacuate.evacuate(two.ctx, vm.uuid, to_host=two.host("b"))
    two.store.set_forced_down(two.host("a"), False)
    done = recovery.reconcile(two.ctx, two.host("a"))
    assert [(r.migration_uuid, r.new_status) for r in done] == [(mig.uuid, "done")]
    assert two.allocations(vm.uuid) == {"b": F}
    assert vm.uuid not in two.running("a") and vm.uuid in two.running("b")


def test_the_returning_source_keeps_what_an_instance_living_there_again_holds(two):
    vm = two.boot("a", F)
    two.store.set_forced_down(two.host("a"), True)
    mig = evacuate.evacuate(two.ctx, vm.uuid, to_host=two.host("b"))
    # What an accepted evacuation back to a (issue 20, before the
    # preconditions table) left: the record names a again.
    two.store.update_instance(vm.uuid, host=two.host("a"), node=two.host("a"))
    held = two.allocations(vm.uuid)
    two.store.set_forced_down(two.host("a"), False)
    done = recovery.reconcile(two.ctx, two.host("a"))
    assert [(r.migration_uuid, r.new_status) for r in done] == []
    assert two.allocations(vm.uuid) == held
    assert held["a"] == F
    assert vm.uuid in two.running("a")
    assert two.store.get_migration(mig.uuid).status == "finished"
    with pytest.raises(Exception, match="lives on its source host"):
        evacuate.source_returned(two.ctx, two.store.get_migration(mig.uuid))


def test_a_confirm_finished_by_recovery_keeps_the_guest_where_the_record_is(two):
    vm = two.boot("a", F)
    mig = migrate.migrate(two.ctx, vm.uuid, to_host=two.host("b"))
    confirming = two.store.update_migration(mig.uuid, status="confirming")
    # The record was put back on a by hand before the confirm finished.
    two.store.update_instance(vm.uuid, host=two.host("a"), node=two.host("a"))
    resize.finish_confirm(two.ctx, confirming)
    assert vm.uuid in two.running("a")
