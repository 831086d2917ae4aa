"""The demo's nested hosts: trees and a shared storage pool.

Two more hosts whose roots report VCPU only: MEMORY_MB sits on two NUMA
children, VGPU on one GPU child under each, and DISK_GB on none of them:
it comes from one storage pool (a sharing provider) both hosts reach
through an aggregate. A move holds what the chosen candidate names, child
by child, and the pool once: the disk does not move.
"""

from __future__ import annotations

from rtframework import scheduler, sharing
from rtframework.compute.values import Flavor
from rtframework.moves import migrate, resize
from rtframework.moves.context import MoveContext
from rtframework.placement import types as t
from rtframework.tracker import format_resources

HOSTS = ("gpu-a", "gpu-b")
POOL = "storage-pool"
AGGREGATE = "8d4f2c1e-3a5b-4e6f-9c7d-0b1a2e3f4d5c"
RENDER = Flavor("render", {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 20, "VGPU": 1})
RENDER_BIG = Flavor("render-big", {"VCPU": 4, "MEMORY_MB": 4096, "DISK_GB": 60, "VGPU": 1})
HUGE_DISK = Flavor("huge-disk", {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 120, "VGPU": 1})
NAME = "render-1"


def _ctx(cluster) -> MoveContext:
    return MoveContext(cluster.conf, cluster.backend, cluster.store,
                       {host: tracker.driver for host, tracker in cluster.trackers.items()})


def _holds(cluster, consumer: str, who: str) -> None:
    """What ``consumer`` holds, provider by provider (by name)."""
    held = cluster.backend.get_consumer_allocations(consumer).allocations
    if not held:
        cluster.say(f"  {who}: nothing")
    for provider, resources in sorted(
            (cluster.backend.get_provider(p).name, r) for p, r in held.items()):
        cluster.say(f"  {who}: {provider:<14} {format_resources(resources)}")


def _pool_used(cluster, pool: str) -> int:
    return cluster.backend.get_provider_usages(pool).get("DISK_GB", 0)


def nested_and_shared(cluster) -> None:
    """Migrate a VGPU instance between two nested hosts, resize its disk on
    the pool and revert, and a resize the pool cannot hold refused."""
    pool = sharing.ensure_pool(cluster.backend, POOL, AGGREGATE,
                               {"DISK_GB": t.Inventory(total=100)})
    cluster.say(f"an operator made {POOL} (DISK_GB 100, shared through aggregate {AGGREGATE})")
    for host in HOSTS:
        cluster.add_host(host, numa_nodes=2, gpus=2, vgpus_per_gpu=1,
                         shared_storage_aggregate=AGGREGATE, child_resource_class=None)
    cluster.periodic(*HOSTS)
    ctx = _ctx(cluster)
    cluster.boot(HOSTS[0], NAME, RENDER)
    instance = cluster.store.lookup_instance(NAME).uuid
    _holds(cluster, instance, NAME)

    migration = migrate.migrate(ctx, NAME, to_host=HOSTS[1])
    cluster.say(f"nested move: migration {migration.uuid} {HOSTS[0]} -> {HOSTS[1]}, "
                f"{migration.status} ({migration.claim_strategy} claim)")
    _holds(cluster, instance, NAME)
    _holds(cluster, migration.uuid, "migration")
    cluster.say(f"  {POOL} holds DISK_GB={_pool_used(cluster, pool)}: the disk does not "
                "move, so it is held once")
    cluster.periodic(*HOSTS)
    resize.confirm(ctx, migration.uuid)
    cluster.say("confirmed: the source's NUMA and GPU children are free again")
    _holds(cluster, instance, NAME)

    migration = resize.run(ctx, NAME, RENDER_BIG, to_host=HOSTS[0])
    cluster.say(f"shared-storage move: resize to {RENDER_BIG.name} back to {HOSTS[0]}, "
                f"{migration.status}: {POOL} holds DISK_GB={_pool_used(cluster, pool)} "
                "(the larger disk, once, not 20 + 60)")
    resize.revert(ctx, migration.uuid)
    cluster.say(f"reverted: {POOL} holds DISK_GB={_pool_used(cluster, pool)} again")
    _holds(cluster, instance, NAME)

    try:
        resize.run(ctx, NAME, HUGE_DISK, to_host=HOSTS[0])
    except scheduler.NoValidHost as exc:
        cluster.say(f"refused: {exc}")
    cluster.say(f"nothing changed: {POOL} holds DISK_GB={_pool_used(cluster, pool)}")
