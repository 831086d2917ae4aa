"""Every row of the preconditions table refuses what it should, names the
rule and the host or state that broke it, and writes nothing: the compute
records and every allocation are the same before and after."""

from __future__ import annotations

import datetime

import pytest

from rtframework.compute import values as v
from rtframework.moves import errors, evacuate, live, migrate, preconditions, resize
from rtframework.moves.errors import PreconditionFailed

pytestmark = pytest.mark.placement

F = {"VCPU": 2, "MEMORY_MB": 1024, "DISK_GB": 10}
BIG = {"VCPU": 4, "MEMORY_MB": 2048, "DISK_GB": 20}


@pytest.fixture
def three(cloud):
    for label in ("a", "b", "c"):
        cloud.add_host(label)
    return cloud


def down(cloud, label: str) -> None:
    """The host stopped reporting longer ago than service_down_time."""
    long_ago = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(
        seconds=10 * cloud.conf.service_down_time)
    cloud.store.heartbeat(cloud.host(label), at=long_ago)


def rows(cloud) -> tuple:
    """Every compute record and every allocation of every consumer."""
    instances = cloud.store.list_instances()
    migrations = cloud.store.list_migrations()
    consumers = [i.uuid for i in instances] + [m.uuid for m in migrations]
    return (instances, migrations, cloud.store.list_services(), cloud.usages(),
            {c: cloud.allocations(c) for c in consumers})


def refused(cloud, rule: str, words: list[str], act) -> PreconditionFailed:
    before = rows(cloud)
    with pytest.raises(errors.MoveError) as caught:
        act()
    message = str(caught.value)
    for word in words:
        assert word in message, message
    assert rows(cloud) == before
    if isinstance(caught.value, PreconditionFailed):
        assert caught.value.rule == rule
        assert f"({rule})" in message
    return caught.value


def evacuated(cloud, vm) -> v.Migration:
    """vm evacuated from a (down) to b; the source half waits for a."""
    down(cloud, "a")
    return evacuate.evacuate(cloud.ctx, vm.uuid, to_host=cloud.host("b"))


def test_migrate_to_an_unknown_host_writes_no_record(three):
    vm = three.boot("a", F)
    refused(three, "destination known", ["nowhere", "reports no compute node"],
            lambda: migrate.migrate(three.ctx, vm.uuid, to_host="nowhere"))
    assert three.store.list_migrations() == []


@pytest.mark.parametrize("flavor, words", [
    ({"VCPU": 0, "MEMORY_MB": 1024, "DISK_GB": 10}, ["VCPU", "from 1", "got 0"]),
    ({"CUSTOM_NOPE": 1, "VCPU": 1}, ["unknown resource class", "CUSTOM_NOPE"]),
    ({"NOT_A_CLASS": 1}, ["NOT_A_CLASS"]),
])
def test_resize_to_an_invalid_flavor_writes_no_record(three, flavor, words):
    vm = three.boot("a", F)
    refused(three, "", words, lambda: resize.run(three.ctx, vm.uuid, v.Flavor("bad", flavor)))
    assert three.store.list_migrations() == []


def test_migrate_to_its_own_host(three):
    vm = three.boot("a", F)
    refused(three, "destination not current host", [three.host("a"), "already"],
            lambda: migrate.migrate(three.ctx, vm.uuid, to_host=three.host("a")))


@pytest.mark.parametrize("move", ["migrate", "resize", "live"])
def test_a_move_from_a_down_host(three, move):
    vm = three.boot("a", F)
    down(three, "a")
    act = {
        "migrate": lambda: migrate.migrate(three.ctx, vm.uuid),
        "resize": lambda: resize.run(three.ctx, vm.uuid, v.Flavor("big", BIG)),
        "live": lambda: live.start(three.ctx, vm.uuid),
    }[move]
    refused(three, "source up", [f"source host {three.host('a')!r}", "is down"], act)


@pytest.mark.parametrize("move", ["migrate", "resize", "live", "evacuate"])
def test_a_move_to_a_down_host(three, move):
    vm = three.boot("a", F)
    down(three, "b")
    b = three.host("b")
    if move == "evacuate":
        down(three, "a")
    act = {
        "migrate": lambda: migrate.migrate(three.ctx, vm.uuid, to_host=b),
        "resize": lambda: resize.run(three.ctx, vm.uuid, v.Flavor("big", BIG), to_host=b),
        "live": lambda: live.start(three.ctx, vm.uuid, to_host=b),
        "evacuate": lambda: evacuate.evacuate(three.ctx, vm.uuid, to_host=b),
    }[move]
    refused(three, "destination up", [f"destination host {b!r} is down"], act)


def test_a_move_to_a_disabled_host(three):
    vm = three.boot("a", F)
    three.store.set_disabled(three.host("b"), True)
    refused(three, "destination enabled", [three.host("b"), "disabled"],
            lambda: live.start(three.ctx, vm.uuid, to_host=three.host("b")))


def test_the_scheduler_skips_down_and_disabled_hosts(three):
    vm = three.boot("a", F)
    three.add_host("d")
    down(three, "b")
    three.store.set_disabled(three.host("c"), True)
    mig = migrate.migrate(three.ctx, vm.uuid)
    assert three.label(mig.dest_host) == "d"


def test_evacuate_from_a_host_that_is_up(three):
    vm = three.boot("a", F)
    refused(three, "source down", [three.host("a"), "is up"],
            lambda: evacuate.evacuate(three.ctx, vm.uuid))


def test_a_second_evacuation_waits_for_the_first_source(three):
    vm = three.boot("a", F)
    first = evacuated(three, vm)
    down(three, "b")
    refused(three, "no other move", [first.uuid, "waits for host", three.host("a")],
            lambda: evacuate.evacuate(three.ctx, vm.uuid, to_host=three.host("c")))


def test_a_destination_that_has_not_cleaned_up(three):
    vm = three.boot("a", F)
    first = evacuated(three, vm)
    # a reports again but has not run its recovery yet.
    three.periodic("a")
    refused(three, "destination clean", [three.host("a"), first.uuid],
            lambda: migrate.migrate(three.ctx, vm.uuid, to_host=three.host("a")))


def test_a_busy_instance(three):
    vm = three.boot("a", F)
    migrate.start(three.ctx, vm.uuid, to_host=three.host("b"))
    refused(three, "task state", ["busy", "resize_prep"],
            lambda: live.start(three.ctx, vm.uuid, to_host=three.host("c")))


@pytest.mark.parametrize("finish", [resize.confirm, resize.revert])
def test_confirm_or_revert_of_an_instance_that_is_not_resized(three, finish):
    vm = three.boot("a", F)
    mig = migrate.migrate(three.ctx, vm.uuid, to_host=three.host("b"))
    three.store.update_instance(vm.uuid, vm_state=v.ERROR)
    refused(three, "instance state", ["ERROR", "needs RESIZED"],
            lambda: finish(three.ctx, mig.uuid))


def test_boot_shelve_and_unshelve_on_down_or_disabled_hosts(three):
    vm = three.boot("a", F)
    down(three, "a")
    refused(three, "source up", ["is down"],
            lambda: three.trackers["a"].shelve_offload(vm.uuid))
    refused(three, "destination up", ["is down"],
            lambda: three.boot("a", F, name="second"))
    three.periodic("a")
    three.trackers["a"].shelve_offload(vm.uuid)
    three.store.set_disabled(three.host("b"), True)
    refused(three, "destination enabled", ["disabled"],
            lambda: three.trackers["b"].unshelve(vm.uuid))
    down(three, "c")
    refused(three, "destination up", ["is down"],
            lambda: three.trackers["c"].unshelve(vm.uuid))


def test_delete_is_allowed_whatever_the_hosts(three):
    vm = three.boot("a", F)
    evacuated(three, vm)
    down(three, "b")
    three.trackers["b"].delete(vm.uuid)
    assert three.usages() == {"a": {}, "b": {}, "c": {}}


def test_every_operation_has_a_row():
    assert set(preconditions.TABLE) == {
        "boot", "delete", "migrate", "resize", "live-migrate", "evacuate",
        "shelve-offload", "unshelve", "confirm", "revert"}
