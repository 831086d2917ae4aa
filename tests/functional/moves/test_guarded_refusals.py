"""Refusals behind the preconditions: what a move step says when it is
called in a state the operations never lead it into (a caller that skipped
the preconditions, a record of another kind, an instance deleted under a
move). Each refuses with its own class and message and changes nothing."""

from __future__ import annotations

import pytest

from rtframework.compute import values as v
from rtframework.moves import errors, evacuate, live, migrate, resize

F = {"VCPU": 2, "MEMORY_MB": 1024, "DISK_GB": 10}


@pytest.fixture
def two(cloud):
    cloud.add_host("a")
    cloud.add_host("b")
    return cloud


def test_a_resize_without_a_flavor(two):
    vm = two.boot("a", F)
    with pytest.raises(errors.MoveError, match="^a resize needs a new flavor$"):
        resize.start(two.ctx, vm.uuid)
    assert two.store.list_migrations(instance_uuid=vm.uuid) == []
    assert two.allocations(vm.uuid) == {"a": F}


def test_a_live_migration_is_not_confirmed_as_a_resize(two):
    vm = two.boot("a", F)
    mig = live.start(two.ctx, vm.uuid, to_host=two.host("b"))
    with pytest.raises(errors.MoveError) as caught:
        resize.confirm(two.ctx, mig.uuid)
    assert str(caught.value).startswith(
        f"migration {mig.uuid} is a {mig.migration_type}; only cold")
    assert two.store.get_migration(mig.uuid).status == mig.status


def test_the_source_of_an_unfinished_move_does_not_return(two):
    vm = two.boot("a", F)
    mig = live.start(two.ctx, vm.uuid, to_host=two.host("b"))
    with pytest.raises(errors.InvalidTransition) as caught:
        evacuate.source_returned(two.ctx, mig)
    assert str(caught.value).startswith(
        f"evacuation {mig.uuid} is {mig.status}; only a finished evacuation")
    assert two.store.get_migration(mig.uuid).status == mig.status


def test_a_live_migration_of_an_instance_deleted_meanwhile_is_not_completed(two):
    vm = two.boot("a", F)
    mig = live.start(two.ctx, vm.uuid, to_host=two.host("b"))
    two.store.update_instance(vm.uuid, vm_state=v.DELETED)
    with pytest.raises(errors.InstanceGone,
                       match=f"^instance {vm.uuid} was deleted during {mig.uuid}$"):
        live.complete(two.ctx, mig.uuid)
    assert two.store.get_migration(mig.uuid).status == mig.status


def test_a_deleted_instance_is_not_moved(two):
    vm = two.boot("a", F)
    two.store.update_instance(vm.uuid, vm_state=v.DELETED)
    with pytest.raises(errors.InstanceGone, match=f"instance {vm.uuid} .*is deleted"):
        migrate.migrate(two.ctx, vm.uuid, to_host=two.host("b"))
    assert two.store.list_migrations(instance_uuid=vm.uuid) == []


def test_a_live_migration_whose_guest_runs_on_the_destination_is_not_rolled_back(two):
    vm = two.boot("a", F)
    mig = live.start(two.ctx, vm.uuid, to_host=two.host("b"))
    # The instance record moved (complete's first step), the record did not.
    two.store.update_instance(vm.uuid, host=mig.dest_host, node=mig.dest_node)
    with pytest.raises(errors.InvalidTransition) as caught:
        live.rollback(two.ctx, mig.uuid)
    assert str(caught.value) == (
        f"live-migration {mig.uuid}: the guest runs on {mig.dest_host!r} already; "
        "it can only complete")
    assert two.store.get_migration(mig.uuid).status == mig.status
    assert two.store.get_instance(vm.uuid).vm_state == v.ACTIVE

