"""Moves between hosts whose disk comes from one shared storage pool: the
disk does not move, so the pool holds it once while the move runs."""

from __future__ import annotations

import uuid

import pytest

from rtframework import scheduler, sharing
from rtframework.compute import values as v
from rtframework.moves import evacuate, live, migrate, recovery, resize
from rtframework.placement import types as t
from rtframework.tracker import NoCapacity

pytestmark = pytest.mark.placement

F = {"VCPU": 2, "MEMORY_MB": 1024, "DISK_GB": 10}
BIGGER = {"VCPU": 3, "MEMORY_MB": 1024, "DISK_GB": 30}


@pytest.fixture(params=["doubled", "migration"])
def pool_cloud(request, cloud, config):
    """Hosts a and b with no local disk, sharing one pool of 100 GB."""
    config.config(move_claim_strategy=request.param, group="placement")
    agg = str(uuid.uuid4())
    config.config(shared_storage_aggregate=agg, group="fake_driver")
    cloud.pool = sharing.ensure_pool(cloud.backend, f"pool-{cloud.suffix}", agg,
                                     {"DISK_GB": t.Inventory(total=100)})
    cloud.add_host("a")
    cloud.add_host("b")
    return cloud


def pool_used(cloud) -> int:
    return cloud.backend.get_provider_usages(cloud.pool).get("DISK_GB", 0)


def holds(cloud, consumer) -> dict:
    """host label (or 'pool') -> class -> amount the consumer holds."""
    held = cloud.allocations(consumer)
    return {("pool" if p == cloud.pool else p): r for p, r in held.items()}


def check(cloud):
    """Both hosts' periodic passes (and heals) change nothing of the move."""
    consumers = [i.uuid for i in cloud.store.list_instances()]
    consumers += [m.uuid for m in cloud.store.list_migrations()]
    before = {c: cloud.allocations(c) for c in consumers}
    for label in ("a", "b"):
        cloud.periodic(label)
    assert {c: cloud.allocations(c) for c in consumers} == before


@pytest.mark.parametrize("end", ["confirm", "revert"])
def test_a_migration_holds_the_shared_disk_once(pool_cloud, end):
    cloud = pool_cloud
    vm = cloud.boot("a", F)
    assert holds(cloud, vm.uuid) == {"a": {"VCPU": 2, "MEMORY_MB": 1024},
                                     "pool": {"DISK_GB": 10}}
    mig = migrate.migrate(cloud.ctx, vm.uuid, to_host=cloud.host("b"))
    assert pool_used(cloud) == 10
    check(cloud)
    if end == "confirm":
        resize.confirm(cloud.ctx, mig.uuid)
        assert holds(cloud, vm.uuid) == {"b": {"VCPU": 2, "MEMORY_MB": 1024},
                                         "pool": {"DISK_GB": 10}}
    else:
        resize.revert(cloud.ctx, mig.uuid)
        assert holds(cloud, vm.uuid) == {"a": {"VCPU": 2, "MEMORY_MB": 1024},
                                         "pool": {"DISK_GB": 10}}
    assert cloud.allocations(mig.uuid) == {}
    assert pool_used(cloud) == 10
    check(cloud)


@pytest.mark.parametrize("end", ["confirm", "revert"])
def test_a_growing_resize_holds_the_larger_disk_once(pool_cloud, end):
    cloud = pool_cloud
    vm = cloud.boot("a", F)
    mig = resize.run(cloud.ctx, vm.uuid, v.Flavor("bigger", BIGGER), to_host=cloud.host("b"))
    assert pool_used(cloud) == 30
    check(cloud)
    if end == "confirm":
        resize.confirm(cloud.ctx, mig.uuid)
        assert pool_used(cloud) == 30
        assert holds(cloud, vm.uuid)["pool"] == {"DISK_GB": 30}
    else:
        resize.revert(cloud.ctx, mig.uuid)
        assert pool_used(cloud) == 10
        assert holds(cloud, vm.uuid) == {"a": {"VCPU": 2, "MEMORY_MB": 1024},
                                         "pool": {"DISK_GB": 10}}
    check(cloud)


def test_a_live_migration_and_its_abort_keep_the_disk_once(pool_cloud):
    cloud = pool_cloud
    vm = cloud.boot("a", F)
    mig = live.start(cloud.ctx, vm.uuid, to_host=cloud.host("b"))
    assert pool_used(cloud) == 10
    live.rollback(cloud.ctx, mig.uuid, abort=True)
    assert holds(cloud, vm.uuid)["pool"] == {"DISK_GB": 10}
    mig = live.start(cloud.ctx, vm.uuid)
    live.complete(cloud.ctx, mig.uuid)
    assert holds(cloud, vm.uuid) == {"b": {"VCPU": 2, "MEMORY_MB": 1024},
                                     "pool": {"DISK_GB": 10}}
    assert pool_used(cloud) == 10
    check(cloud)


@pytest.mark.parametrize("end", ["confirm", "revert"])
def test_check_judges_a_pool_cloud_without_false_findings(pool_cloud, end):
    # The reference model knows the pool serves both hosts: the disk there
    # is the instance's own, and held once while the move runs.
    cloud = pool_cloud
    vm = cloud.boot("a", F)
    assert judged(cloud) == []
    mig = resize.run(cloud.ctx, vm.uuid, v.Flavor("bigger", BIGGER), to_host=cloud.host("b"))
    assert judged(cloud) == []
    getattr(resize, end)(cloud.ctx, mig.uuid)
    assert judged(cloud) == []


def test_check_finds_a_shared_disk_held_twice(pool_cloud):
    cloud = pool_cloud
    vm = cloud.boot("a", F)
    migrate.migrate(cloud.ctx, vm.uuid, to_host=cloud.host("b"))
    held = cloud.backend.get_consumer_allocations(vm.uuid)
    twice = {p: dict(r) for p, r in held.allocations.items()}
    twice[cloud.pool] = {"DISK_GB": 20}
    cloud.backend.write_allocations([t.AllocationWrite(
        vm.uuid, twice, "proj", "user", held.generation)])
    assert {(f.kind, f.provider_uuid) for f in cloud.violations()} == {
        ("unexpected_move_claim", cloud.pool)}


def judged(cloud) -> list[str]:
    """The kinds of what ``rtf check`` reports."""
    return sorted(f.kind for f in cloud.violations())


def test_a_refusal_names_the_full_pool(pool_cloud):
    cloud = pool_cloud
    cloud.boot("a", {"VCPU": 1, "MEMORY_MB": 256, "DISK_GB": 80}, name="big")
    vm = cloud.boot("b", F)
    # The pool holds the 10 GB disk already: the resize needs 20 more.
    full = f"pool-{cloud.suffix} is full for DISK_GB=20: 10 free of 100"
    with pytest.raises(scheduler.NoValidHost, match=full):
        resize.start(cloud.ctx, vm.uuid, v.Flavor("bigger", BIGGER), to_host=cloud.host("a"))
    assert holds(cloud, vm.uuid)["pool"] == {"DISK_GB": 10}
    with pytest.raises(NoCapacity, match=f"pool-{cloud.suffix} is full for DISK_GB=20: 10 free"):
        cloud.boot("a", {**F, "DISK_GB": 20}, name="one-too-many")


def fill_pool(cloud, vm_disk: int) -> None:
    """Fill the pool to the last GB with a filler instance on host b."""
    cloud.boot("b", {"VCPU": 1, "MEMORY_MB": 256, "DISK_GB": 100 - vm_disk}, name="filler")
    assert pool_used(cloud) == 100


@pytest.mark.parametrize("to", [None, "b"])
@pytest.mark.parametrize("kind", ["migrate", "live-migrate", "evacuate"])
def test_a_full_pool_lets_its_hosts_move_and_evacuate(pool_cloud, kind, to):
    # The disk stays in the pool: a move between two hosts of one pool
    # needs no room there, so a full pool traps no host.
    cloud = pool_cloud
    vm = cloud.boot("a", F)
    fill_pool(cloud, F["DISK_GB"])
    to_host = cloud.host(to) if to else None
    if kind == "migrate":
        mig = migrate.migrate(cloud.ctx, vm.uuid, to_host=to_host)
    elif kind == "live-migrate":
        mig = live.start(cloud.ctx, vm.uuid, to_host=to_host)
    else:
        cloud.store.set_forced_down(cloud.host("a"), True)
        mig = evacuate.evacuate(cloud.ctx, vm.uuid, to_host=to_host)
    assert cloud.label(cloud.store.get_migration(mig.uuid).dest_host) == "b"
    assert pool_used(cloud) == 100
    assert holds(cloud, vm.uuid)["pool"] == {"DISK_GB": 10}
    assert judged(cloud) == []
    if kind == "migrate":
        resize.confirm(cloud.ctx, mig.uuid)
    elif kind == "live-migrate":
        live.complete(cloud.ctx, mig.uuid)
    else:
        assert holds(cloud, vm.uuid)["a"] == {"VCPU": 2, "MEMORY_MB": 1024}
        cloud.store.set_forced_down(cloud.host("a"), False)
        recovery.reconcile(cloud.ctx, cloud.host("a"))
    assert holds(cloud, vm.uuid) == {"b": {"VCPU": 2, "MEMORY_MB": 1024},
                                     "pool": {"DISK_GB": 10}}
    assert pool_used(cloud) == 100
    assert judged(cloud) == []


@pytest.mark.parametrize("to", [None, "b"])
@pytest.mark.parametrize("end", ["confirm", "revert"])
def test_a_resize_in_a_pool_needs_only_its_growth(pool_cloud, end, to):
    # 20 GB free and a resize from 10 to 30 GB: the pool holds the disk
    # once, so exactly the free 20 GB are enough.
    cloud = pool_cloud
    vm = cloud.boot("a", F)
    cloud.boot("b", {"VCPU": 1, "MEMORY_MB": 256, "DISK_GB": 70}, name="filler")
    assert pool_used(cloud) == 80
    mig = resize.run(cloud.ctx, vm.uuid, v.Flavor("bigger", BIGGER),
                     to_host=cloud.host(to) if to else None)
    assert pool_used(cloud) == 100
    assert holds(cloud, vm.uuid)["pool"] == {"DISK_GB": 30}
    assert judged(cloud) == []
    getattr(resize, end)(cloud.ctx, mig.uuid)
    assert pool_used(cloud) == (100 if end == "confirm" else 80)
    assert judged(cloud) == []


def test_a_resize_in_a_full_pool_is_refused_for_its_growth_only(pool_cloud):
    cloud = pool_cloud
    vm = cloud.boot("a", F)
    cloud.boot("b", {"VCPU": 1, "MEMORY_MB": 256, "DISK_GB": 71}, name="filler")
    with pytest.raises(scheduler.NoValidHost, match="DISK_GB=20: 19 free of 100"):
        resize.run(cloud.ctx, vm.uuid, v.Flavor("bigger", BIGGER), to_host=cloud.host("b"))
    assert holds(cloud, vm.uuid)["pool"] == {"DISK_GB": 10}
    assert pool_used(cloud) == 81


def test_a_resize_past_the_pools_max_unit_is_refused_by_name(pool_cloud):
    # The growth (20) is within max_unit, the whole new disk (30) is not:
    # the refusal names max_unit, and nothing changes.
    cloud = pool_cloud
    cloud.backend.set_inventories(cloud.pool, cloud.backend.get_inventories(cloud.pool).generation,
                                  {"DISK_GB": t.Inventory(total=100, max_unit=20)})
    vm = cloud.boot("a", F)
    with pytest.raises(scheduler.NoValidHost, match="exceeds max_unit 20"):
        resize.run(cloud.ctx, vm.uuid, v.Flavor("bigger", BIGGER), to_host=cloud.host("b"))
    assert holds(cloud, vm.uuid)["pool"] == {"DISK_GB": 10}
    assert pool_used(cloud) == 10


@pytest.mark.parametrize("end", ["confirm", "revert"])
def test_a_same_host_resize_in_a_full_pool_needs_only_its_growth(pool_cloud, end):
    cloud = pool_cloud
    vm = cloud.boot("a", F)
    cloud.boot("b", {"VCPU": 1, "MEMORY_MB": 256, "DISK_GB": 70}, name="filler")
    mig = resize.run(cloud.ctx, vm.uuid, v.Flavor("bigger", BIGGER), to_host=cloud.host("a"))
    assert pool_used(cloud) == 100
    assert holds(cloud, vm.uuid)["pool"] == {"DISK_GB": 30}
    check(cloud)
    getattr(resize, end)(cloud.ctx, mig.uuid)
    assert pool_used(cloud) == (100 if end == "confirm" else 80)
    assert judged(cloud) == []
