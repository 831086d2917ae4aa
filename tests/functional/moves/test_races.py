"""Two actors on one move: exactly one wins, nothing is left half-done."""

from __future__ import annotations

import threading

import pytest

from rtframework.moves import delete, errors, migrate, resize

pytestmark = pytest.mark.placement

F = {"VCPU": 2, "MEMORY_MB": 1024, "DISK_GB": 10}


def race(*calls):
    """Run ``calls`` at once; returns each one's result or exception."""
    results: list = [None] * len(calls)
    start = threading.Barrier(len(calls))

    def run(i, call):
        start.wait()
        try:
            results[i] = call()
        except Exception as exc:  # collected for the assertions
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i, c)) for i, c in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


@pytest.fixture(params=["doubled", "migration"])
def verify_resize(request, cloud, config):
    config.config(move_claim_strategy=request.param, group="placement")
    cloud.add_host("a")
    cloud.add_host("b")
    vm = cloud.boot("a", F)
    return cloud, vm, migrate.migrate(cloud.ctx, vm.uuid, to_host=cloud.host("b"))


def test_confirm_and_revert_at_once_end_on_one_side(verify_resize):
    cloud, vm, mig = verify_resize
    results = race(lambda: resize.confirm(cloud.ctx, mig.uuid),
                   lambda: resize.revert(cloud.ctx, mig.uuid))
    won = [r for r in results if not isinstance(r, Exception)]
    lost = [r for r in results if isinstance(r, Exception)]
    assert len(won) == 1 and len(lost) == 1
    assert isinstance(lost[0], errors.MoveError)
    final = cloud.store.get_migration(mig.uuid).status
    assert final == won[0].status
    side = "b" if final == "confirmed" else "a"
    assert cloud.allocations(vm.uuid) == {side: F}
    assert cloud.allocations(mig.uuid) == {}


@pytest.mark.parametrize("deleter", ["rtf delete", "move code"])
def test_delete_racing_a_revert_leaves_nothing(verify_resize, deleter):
    cloud, vm, mig = verify_resize
    if deleter == "rtf delete":  # the owning host's tracker, as the CLI runs it
        do_delete = lambda: cloud.trackers["b"].delete(vm.uuid)  # noqa: E731
    else:
        do_delete = lambda: delete.delete(cloud.ctx, vm.uuid)  # noqa: E731
    reverted, deleted = race(lambda: resize.revert(cloud.ctx, mig.uuid), do_delete)
    # The delete always wins: a racing move step never makes it fail.
    assert not isinstance(deleted, BaseException), deleted
    assert (deleted.uuid, deleted.vm_state) == (vm.uuid, "DELETED")
    # The revert finished first, or lost to the delete with a move error.
    if isinstance(reverted, BaseException):
        assert isinstance(reverted, errors.MoveError), repr(reverted)
    else:
        assert reverted.status == "reverted"
    assert cloud.store.get_instance(vm.uuid).vm_state == "DELETED"
    assert cloud.store.get_migration(mig.uuid).status in ("reverted", "error")
    assert cloud.allocations(vm.uuid) == {} and cloud.allocations(mig.uuid) == {}
    assert cloud.usages() == {"a": {}, "b": {}}


def test_rollback_after_delete_brings_nothing_back(verify_resize):
    cloud, vm, mig = verify_resize
    cloud.trackers["b"].delete(vm.uuid)
    resize.rollback(cloud.ctx, mig.uuid, reason="late rollback")
    with pytest.raises(errors.InvalidTransition):
        resize.revert(cloud.ctx, mig.uuid)
    assert cloud.usages() == {"a": {}, "b": {}}
