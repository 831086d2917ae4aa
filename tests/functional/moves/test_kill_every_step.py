"""A host killed at every step boundary of every operation, then restarted:
after its reconcile every instance holds exactly what its state says.

Each operation is run once whole to count its steps (record writes,
allocation writes, guests started or destroyed: :mod:`tests.fixtures.crash`),
then once per boundary with the process "killed" right after that step.
The killed host starts again (startup recovery), then the other hosts of
the operation (an evacuated source returns), then every host runs two
periodic passes. What each instance and migration consumer may hold is
judged by the reference model (:mod:`rtframework.reference`), which no
move or tracker code feeds.
"""

from __future__ import annotations

import pytest

from rtframework import instance_recovery, reference
from rtframework.compute import values as v
from rtframework.moves import delete, evacuate, live, migrate, resize
from rtframework.moves.context import MoveContext
from rtframework.tracker import ResourceTracker
from tests.fixtures import databases
from tests.fixtures.crash import Crash, Steps
from tests.functional.moves.conftest import Cloud

pytestmark = pytest.mark.placement

F = {"VCPU": 2, "MEMORY_MB": 1024, "DISK_GB": 10}
G = {"VCPU": 1, "MEMORY_MB": 512, "DISK_GB": 5}


def _vm(cloud):
    return cloud.boot("a", F, name=cloud.trial)


def _boot(cloud):
    return None, lambda: _vm(cloud)


def _shelve(cloud):
    vm = _vm(cloud)
    return vm, lambda: cloud.trackers["a"].shelve_offload(vm.uuid)


def _unshelve(cloud):
    vm = _vm(cloud)
    cloud.trackers["a"].shelve_offload(vm.uuid)
    return vm, lambda: cloud.trackers["b"].unshelve(vm.uuid)


def _migrate(cloud):
    vm = _vm(cloud)
    return vm, lambda: migrate.migrate(cloud.ctx, vm.uuid, to_host=cloud.host("b"))


def _resize(cloud):
    vm = _vm(cloud)
    return vm, lambda: resize.run(cloud.ctx, vm.uuid, v.Flavor("g", G), to_host=cloud.host("b"))


def _same_host_resize(cloud):
    vm = _vm(cloud)
    return vm, lambda: resize.run(cloud.ctx, vm.uuid, v.Flavor("g", G), to_host=cloud.host("a"))


def _verify_resize(cloud):
    vm = _vm(cloud)
    return vm, migrate.migrate(cloud.ctx, vm.uuid, to_host=cloud.host("b"))


def _confirm(cloud):
    vm, mig = _verify_resize(cloud)
    return vm, lambda: resize.confirm(cloud.ctx, mig.uuid)


def _revert(cloud):
    vm, mig = _verify_resize(cloud)
    return vm, lambda: resize.revert(cloud.ctx, mig.uuid)


def _delete_mid_move(cloud):
    vm, _ = _verify_resize(cloud)
    return vm, lambda: cloud.trackers["b"].delete(vm.uuid)


def _live_then(finish):
    def setup(cloud):
        vm = _vm(cloud)

        def run():
            mig = live.start(cloud.ctx, vm.uuid, to_host=cloud.host("b"))
            finish(cloud.ctx, mig.uuid)
        return vm, run
    return setup


def _evacuate(cloud):
    vm = _vm(cloud)
    cloud.store.set_forced_down(cloud.host("a"), True)
    return vm, lambda: evacuate.evacuate(cloud.ctx, vm.uuid, to_host=cloud.host("b"))


# operation -> (set up and return the callable, label of the host that runs it)
OPERATIONS = {
    "boot": (_boot, "a"),
    "shelve offload": (_shelve, "a"),
    "unshelve": (_unshelve, "b"),
    "cold migrate": (_migrate, "a"),
    "resize": (_resize, "a"),
    "same-host resize": (_same_host_resize, "a"),
    "confirm": (_confirm, "b"),
    "revert": (_revert, "a"),
    "delete mid-move": (_delete_mid_move, "b"),
    "live migrate": (_live_then(live.complete), "a"),
    "failed live migrate": (_live_then(live.rollback), "a"),
    "evacuate": (_evacuate, "b"),
}


def _steps(cloud: Cloud, at: int | None) -> Steps:
    return Steps([cloud.store, cloud.backend,
                  *(t.driver for t in cloud.trackers.values())], at=at)


def _restart(cloud: Cloud, label: str) -> None:
    """The host's agent starts again over the same hypervisor."""
    old = cloud.trackers[label]
    tracker = ResourceTracker(cloud.conf, old.host, old.driver, cloud.backend, cloud.store)
    cloud.trackers[label] = tracker
    cloud.store.set_forced_down(tracker.host, False)
    ctx = MoveContext(cloud.conf, cloud.backend, cloud.store, {tracker.host: tracker.driver})
    instance_recovery.recover_host(tracker, ctx)


def _settle(cloud: Cloud, killed: str) -> None:
    _restart(cloud, killed)
    for label in sorted(cloud.trackers):
        if label != killed:
            _restart(cloud, label)
    for _ in range(2):
        for label in sorted(cloud.trackers):
            cloud.periodic(label)


def _by_root(cloud: Cloud, consumer: str) -> reference.Alloc:
    held = cloud.backend.get_consumer_allocations(consumer).allocations
    roots = {p: cloud.backend.get_provider(p).root_uuid or p for p in held}
    return reference.by_root(held, roots)


def _root(cloud: Cloud, host: str | None, node: str | None) -> str | None:
    label = cloud.label(host)
    return cloud.root(label) if label in cloud.trackers and node else None


def _assert_holds_what_its_state_says(cloud: Cloud, where: str) -> None:
    for instance in cloud.store.list_instances():
        if instance.name != cloud.trial:
            continue  # another trial's
        moves = cloud.store.list_migrations(instance_uuid=instance.uuid)
        unfinished = [m for m in moves if not m.finished]
        assert instance.vm_state != v.BUILDING and instance.task_state is None, (
            where, instance)
        for m in moves:
            if m.finished:
                assert _by_root(cloud, m.uuid) == {}, (where, m)
        have = _by_root(cloud, instance.uuid)
        if unfinished:
            (m,) = unfinished
            assert (m.migration_type, m.status) in (
                ("migration", "finished"), ("resize", "finished")), (where, m)
            allowed = reference.in_move(
                m.migration_type, m.claim_strategy, m.status,
                source_root=_root(cloud, m.source_host, m.source_node),
                dest_root=_root(cloud, m.dest_host, m.dest_node),
                f_old=m.old_flavor.resources, f_new=m.new_flavor.resources)
            assert any(h.matches(have, _by_root(cloud, m.uuid)) for h in allowed), (
                where, m, have)
            hosts = {m.source_host, m.dest_host}
        elif instance.vm_state in (v.ACTIVE, v.RESIZED):
            own = _root(cloud, instance.host, instance.node)
            assert have == reference.add({own: instance.flavor.resources}), (where, instance)
            hosts = {instance.host}
        else:
            assert have == {}, (where, instance, have)
            hosts = set()
        for label, tracker in cloud.trackers.items():
            runs = instance.uuid in tracker.driver.list_instances()
            if tracker.host not in hosts:
                assert not runs, (where, f"stray guest on {label}", instance)
            elif instance.host == tracker.host:
                assert runs, (where, f"guest missing on {label}", instance)


def _clean_up(cloud: Cloud) -> None:
    """Delete the trial's instance: the next trial starts from empty hosts."""
    for instance in cloud.store.list_instances():
        if instance.name == cloud.trial and instance.vm_state != v.DELETED:
            delete.delete(cloud.ctx, instance.uuid)
    for label in cloud.trackers:
        cloud.store.set_forced_down(cloud.host(label), False)
    assert cloud.usages() == {"a": {}, "b": {}}


# Claim strategies matter to moves only; both run on PostgreSQL and MariaDB,
# the default one on SQLite (the default suite stays quick).
STRATEGIES = ["migration"] if databases.selected_engine() == "sqlite" \
    else ["migration", "doubled"]
CASES = [(op, strategy) for op in sorted(OPERATIONS) for strategy in STRATEGIES
         if strategy == "migration" or op not in ("boot", "shelve offload", "unshelve")]


@pytest.mark.parametrize("operation,strategy", CASES)
def test_a_kill_at_every_step_is_settled_by_the_restart(cloud, config, operation, strategy):
    config.config(move_claim_strategy=strategy, group="placement")
    setup, executor = OPERATIONS[operation]
    cloud.add_host("a")
    cloud.add_host("b")
    cloud.trial = "whole"
    _, run = setup(cloud)
    counter = _steps(cloud, None)
    run()
    counter.remove()
    _clean_up(cloud)
    assert counter.count >= 2, counter.log
    for at in range(1, counter.count):
        cloud.trial = f"killed-after-{at}"
        _, run = setup(cloud)
        steps = _steps(cloud, at)
        try:
            with pytest.raises(Crash):
                run()
        finally:
            steps.remove()
        _settle(cloud, executor)
        _assert_holds_what_its_state_says(
            cloud, f"{operation} killed after step {at} of {counter.log}")
        _clean_up(cloud)
