"""The demo's move steps: each shows usages before, during and after.

Each step takes the demo's cluster (``conf``, ``backend``, ``store``,
``trackers``, ``say``, ``periodic``) and runs every host's periodic update
while the move holds both sides, to show that no heal undoes it.
"""

from __future__ import annotations

from rtframework.compute.values import Flavor
from rtframework.moves import evacuate, live, migrate, recovery, resize
from rtframework.moves.context import MoveContext
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


WHY_BOTH_HALVES = (
    "Why both halves must survive the other host's heal: until the move is "
    "confirmed or reverted nobody knows which host keeps the instance. The "
    "source must keep its half so that a revert (or a failed live migration) "
    "finds its room still there instead of handed to another boot; the "
    "destination must keep its half because the guest is already being built "
    "there. A heal that removed the half it does not \"own\" would turn a move "
    "into an overcommitted host or a lost instance, so each host heals only "
    "instances it owns that are deleted or shelved, never one that is moving."
)


def _moving(cluster, migration, *up_hosts: str) -> None:
    """Show both halves, then let every (up) host's periodic run try to undo them."""
    cluster.say(f"{migration.migration_type} {migration.uuid}: {migration.source_host} -> "
                f"{migration.dest_host}, {migration.status} ({migration.claim_strategy} claim)")
    hosts = sorted({migration.source_host, migration.dest_host})
    _usages(cluster, "during", *hosts)
    cluster.periodic(*up_hosts)
    _usages(cluster, "still", *hosts)


def migrate_and_confirm(cluster) -> None:
    """Boot app-1 on host-b, cold-migrate it where the scheduler says, confirm."""
    ctx = _ctx(cluster)
    source = "host-b"
    cluster.boot(source, NAME, SMALL)
    _usages(cluster, "before", *sorted(cluster.trackers))
    migration = migrate.migrate(ctx, NAME)
    _moving(cluster, migration)
    cluster.say(WHY_BOTH_HALVES)
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


def live_migrate(cluster) -> None:
    """Live-migrate app-1 while every host's periodic runs, then complete it."""
    ctx = _ctx(cluster)
    source = cluster.store.lookup_instance(NAME).host
    migration = live.start(ctx, NAME)
    _moving(cluster, migration)
    live.complete(ctx, migration.uuid)
    cluster.say(f"completed: {NAME} runs on {migration.dest_host}; the source half is gone")
    _usages(cluster, "after", source, migration.dest_host)


EVACUATED = "batch-1"


def evacuate_from_a_down_host(cluster) -> None:
    """host-c goes down; batch-1 is rebuilt elsewhere; host-c cleans up on return."""
    ctx = _ctx(cluster)
    source = cluster.store.lookup_instance(EVACUATED).host
    cluster.store.set_forced_down(source, True)
    cluster.say(f"{source} is down (forced down, as after fencing a dead host)")
    migration = evacuate.evacuate(ctx, EVACUATED)
    up = sorted(h for h in cluster.trackers if h != source)
    _moving(cluster, migration, *up)
    cluster.say(f"{source} cannot give its half back while it is down; the others leave it be")
    cluster.store.set_forced_down(source, False)
    for done in recovery.reconcile(ctx, source):
        cluster.say(f"{source} is back: {done.migration_type} of {EVACUATED} was "
                    f"{done.old_status}: {done.action}")
    cluster.periodic(source)
    _usages(cluster, "after", source, migration.dest_host)
