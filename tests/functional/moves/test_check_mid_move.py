"""The checker reads the records, then placement provider by provider: a
move that begins (or begins and fails) while it reads placement must not
be judged against the records read before it. A soak on MariaDB once
confirmed such a finding twice in a row: a resting instance "missing" its
device, read after the move had taken it off the instance."""

from __future__ import annotations

import pytest

from rtframework import invariants
from rtframework.moves import live, migrate, resize
from rtframework.proxy import CallProxy
from tests.functional.moves.test_nested import F, fpga_cloud  # noqa: F401

pytestmark = pytest.mark.placement


class _MoveWhileReading(CallProxy):
    """Runs ``steps[n]`` right before the n-th provider read begins (its
    inventories, usage and allocations; 0: the first)."""

    def __init__(self, backend, steps) -> None:
        super().__init__(backend)
        self.steps, self.reads, self.ran = dict(steps), 0, 0

    def get_inventories(self, uuid_: str):
        step = self.steps.get(self.reads)
        self.reads += 1
        if step is not None:
            step()
            self.ran += 1
        return self.wrapped.get_inventories(uuid_)


def _found_while_migrating(cloud, instance: str, to: str) -> list[tuple[str, str]]:
    """(kind, consumer) of what one check finds while ``instance`` begins a
    migration to host ``to`` after the first provider is read."""
    racing = _MoveWhileReading(cloud.backend, {
        1: lambda: migrate.start(cloud.ctx, instance, to_host=cloud.host(to))})
    found = _check(cloud, racing)
    assert racing.ran == 1
    return [(f.kind, f.consumer_uuid) for f in found]


def _check(cloud, backend) -> list[invariants.Violation]:
    return invariants.check(backend, cloud.store, recheck_delay=-1,
                            own_trees_only=True)


@pytest.mark.parametrize("move", ["migrate", "live migration that fails"])
def test_a_move_while_placement_is_read_is_left_to_the_next_check(fpga_cloud, move):  # noqa: F811
    """Two hosts of two providers each, read tree by tree: the move begins
    after the first provider is read; a failing one is rolled back before
    the last, so every order of the trees sees part of it."""
    cloud = fpga_cloud
    vm = cloud.boot("a", F)
    started = []

    def start():
        if move == "migrate":
            migrate.start(cloud.ctx, vm.uuid, to_host=cloud.host("b"))
        else:
            started.append(live.start(cloud.ctx, vm.uuid, to_host=cloud.host("b")))

    steps = {1: start}
    if move != "migrate":
        steps[3] = lambda: live.rollback(cloud.ctx, started[0].uuid)
    racing = _MoveWhileReading(cloud.backend, steps)
    assert _check(cloud, racing) == []
    assert racing.ran == len(steps)
    assert _check(cloud, cloud.backend) == []  # read again, the move is judged


def test_a_real_finding_still_shows_while_another_instance_moves(fpga_cloud):  # noqa: F811
    cloud = fpga_cloud
    moving = cloud.boot("a", F, name="moving")
    broken = cloud.boot("a", {"VCPU": 2, "MEMORY_MB": 1024}, name="broken")
    held = cloud.backend.get_consumer_allocations(broken.uuid)
    cloud.backend.put_allocations(broken.uuid, {cloud.root("a"): {"VCPU": 1, "MEMORY_MB": 1024}},
                                  project_id=held.project_id, user_id=held.user_id,
                                  consumer_generation=held.generation)
    found = _found_while_migrating(cloud, moving.uuid, "b")
    assert found == [(invariants.WRONG_ALLOCATION, broken.uuid)]


def test_a_finished_move_that_leaked_is_found_while_its_instance_moves(fpga_cloud):  # noqa: F811
    """Only the moves of an unsettled instance that changed or are still
    running are left out; a finished one that still holds is judged."""
    cloud = fpga_cloud
    vm = cloud.boot("a", F)
    done = migrate.migrate(cloud.ctx, vm.uuid, to_host=cloud.host("b"))
    resize.confirm(cloud.ctx, done.uuid)
    cloud.backend.put_allocations(done.uuid, {cloud.root("a"): {"VCPU": 1}},
                                  project_id=vm.project_id, user_id=vm.user_id,
                                  consumer_generation=None)
    found = _found_while_migrating(cloud, vm.uuid, "a")
    assert found == [(invariants.LEAKED_MIGRATION_CONSUMER, done.uuid)]


def test_the_check_names_the_instances_it_left_unjudged(fpga_cloud):  # noqa: F811
    cloud = fpga_cloud
    moving = cloud.boot("a", F, name="moving")
    cloud.boot("a", {"VCPU": 2, "MEMORY_MB": 1024}, name="resting")
    unjudged: set[str] = set()
    racing = _MoveWhileReading(cloud.backend, {
        1: lambda: migrate.start(cloud.ctx, moving.uuid, to_host=cloud.host("b"))})
    assert invariants.check(racing, cloud.store, recheck_delay=-1, own_trees_only=True,
                            unjudged=unjudged) == []
    assert unjudged == {moving.uuid}
    unjudged.clear()
    assert _check(cloud, cloud.backend) == []
    assert invariants.check(cloud.backend, cloud.store, recheck_delay=-1,
                            own_trees_only=True, unjudged=unjudged) == []
    assert unjudged == set()  # read again at rest: judged


def test_an_instance_booted_while_placement_is_read_is_named_unjudged(fpga_cloud):  # noqa: F811
    """Created after the records were read: the check cannot judge it, and
    must say so rather than pass over it in silence."""
    cloud = fpga_cloud
    cloud.boot("a", F, name="resting")
    late = []
    racing = _MoveWhileReading(cloud.backend, {1: lambda: late.append(cloud.boot("b", F))})
    unjudged: set[str] = set()
    assert invariants.check(racing, cloud.store, recheck_delay=-1, own_trees_only=True,
                            unjudged=unjudged) == []
    assert racing.ran == 1
    assert unjudged == {late[0].uuid}
    unjudged.clear()
    assert invariants.check(cloud.backend, cloud.store, recheck_delay=-1,
                            own_trees_only=True, unjudged=unjudged) == []
    assert unjudged == set()  # read again: judged
