"""The demo's move steps: each shows usages before, during and after.

Each step takes the demo's cluster (``conf``, ``backend``, ``store``,
``trackers``, ``say``, ``periodic``) and runs every host's periodic update
while the move holds both sides, to show that no heal undoes it.
"""

from __future__ import annotations

from rtframework.compute.values import Flavor
from rtframework.moves import migrate, resize
from rtframework.moves.common import MoveContext
from rtframework.tracker import format_resources

SMALL = Flavor("small", {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 20})
MEDIUM = Flavor("medium", {"VCPU": 4, "MEMORY_MB": 4096, "DISK_GB": 40})
NAME = "app-1"


def _ctx(cluster) -> MoveContext:
    return MoveContext(cluster.conf, cluster.backend, cluster.store,
                       {host: tracker.driver for host, tracker in cluster.trackers.items()})


def _usages(cluster, when: str, *hosts: str) -> None:
    for host in hosts:
        root = cluster.trackers[host].node_root_uuid(host)
        used = {rc: n for rc, n in cluster.backend.get_provider_usages(root).items() if n}
        cluster.say(f"  {when:<7} {host}: {format_resources(used) or 'nothing'}")


def _moving(cluster, migration) -> None:
    """Show both halves, then let every host's periodic run try to undo them."""
    cluster.say(f"{migration.migration_type} {migration.uuid}: {migration.source_host} -> "
                f"{migration.dest_host}, {migration.status} ({migration.claim_strategy} claim)")
    hosts = sorted({migration.source_host, migration.dest_host})
    _usages(cluster, "during", *hosts)
    cluster.periodic()
    _usages(cluster, "still", *hosts)


def migrate_and_confirm(cluster) -> None:
    """Boot app-1 on host-b, cold-migrate it where the scheduler says, confirm."""
    ctx = _ctx(cluster)
    source = "host-b"
    cluster.boot(source, NAME, SMALL)
    _usages(cluster, "before", *sorted(cluster.trackers))
    migration = migrate.migrate(ctx, NAME)
    _moving(cluster, migration)
    resize.confirm(ctx, migration.uuid)
    resize.confirm(ctx, migration.uuid)
    cluster.say("confirmed (twice: the second changes nothing); the source half is gone")
    _usages(cluster, "after", source, migration.dest_host)


def resize_and_revert(cluster) -> None:
    ctx = _ctx(cluster)
    instance = cluster.store.lookup_instance(NAME)
    _usages(cluster, "before", *sorted(cluster.trackers))
    migration = resize.run(ctx, NAME, MEDIUM)
    _moving(cluster, migration)
    resize.revert(ctx, migration.uuid)
    back = cluster.store.lookup_instance(NAME)
    cluster.say(f"reverted: {NAME} is {back.flavor.name} on {back.host} again")
    _usages(cluster, "after", instance.host, migration.dest_host)


def same_host_resize(cluster) -> None:
    """Resize app-1 on its own host and confirm, then delete it."""
    ctx = _ctx(cluster)
    host = cluster.store.lookup_instance(NAME).host
    _usages(cluster, "before", host)
    migration = resize.run(ctx, NAME, MEDIUM, to_host=host)
    _moving(cluster, migration)
    resize.confirm(ctx, migration.uuid)
    cluster.say(f"confirmed: {NAME} is {MEDIUM.name} on {host}, counted once")
    _usages(cluster, "after", host)
    cluster.trackers[host].delete(NAME)
    cluster.say(f"deleted {NAME}")
    _usages(cluster, "after", host)
