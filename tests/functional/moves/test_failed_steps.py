"""A move whose guest cannot be started on the destination after the claim
rolls back: the source only, the record closed, the instance idle on the
source, and the checker (judged by the reference model) finds nothing."""

from __future__ import annotations

import pytest

from rtframework.compute import values as v
from rtframework.driver import DriverError
from rtframework.moves import evacuate, live, migrate, resize

pytestmark = pytest.mark.placement

F = {"VCPU": 2, "MEMORY_MB": 1024, "DISK_GB": 10}
BIG = {"VCPU": 4, "MEMORY_MB": 2048, "DISK_GB": 20}


def _live(cloud, vm):
    return live.start(cloud.ctx, vm, to_host=cloud.host("b"))


def _cold(cloud, vm):
    return migrate.migrate(cloud.ctx, vm, to_host=cloud.host("b"))


def _resize(cloud, vm):
    return resize.run(cloud.ctx, vm, v.Flavor("big", BIG), to_host=cloud.host("b"))


def _evacuate(cloud, vm):
    cloud.store.set_forced_down(cloud.host("a"), True)
    return evacuate.evacuate(cloud.ctx, vm, to_host=cloud.host("b"))


MOVES = {"live": (_live, "failed"), "cold": (_cold, "error"), "resize": (_resize, "error"),
         "evacuate": (_evacuate, "error")}


@pytest.mark.parametrize("strategy", ["doubled", "migration"])
@pytest.mark.parametrize("kind", sorted(MOVES))
def test_destination_spawn_failure_after_the_claim_rolls_back(cloud, config, kind, strategy):
    config.config(move_claim_strategy=strategy, group="placement")
    cloud.add_host("a")
    b = cloud.add_host("b")
    vm = cloud.boot("a", F)
    b.driver.fail_spawn = lambda spec: spec.uuid == vm.uuid
    move, status = MOVES[kind]

    with pytest.raises(DriverError, match="spawn of instance .* failed"):
        move(cloud, vm.uuid)

    [migration] = cloud.store.list_migrations(instance_uuid=vm.uuid)
    assert migration.status == status
    instance = cloud.store.get_instance(vm.uuid)
    assert (cloud.label(instance.host), instance.vm_state, instance.task_state) == (
        "a", v.ACTIVE, None)
    assert cloud.allocations(vm.uuid) == {"a": F}
    assert cloud.allocations(migration.uuid) == {}
    assert cloud.usages()["b"] == {}
    assert vm.uuid not in cloud.running("b")
    assert cloud.violations() == []

    # Not left busy: the next move of the instance is accepted and works.
    cloud.store.set_forced_down(cloud.host("a"), False)
    b.driver.fail_spawn = None
    done = live.start(cloud.ctx, vm.uuid, to_host=cloud.host("b"))
    assert live.complete(cloud.ctx, done.uuid).status == "done"
    assert cloud.allocations(vm.uuid) == {"b": F}
