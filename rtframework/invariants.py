"""The accounting invariants, checked over the compute records and placement.

:func:`check` reports every violation of:

1. an instance that is not in a move holds what the reference model
   (:mod:`rtframework.reference`) allows for its vm_state and task_state:
   an idle ACTIVE one exactly its flavor on its own node's tree, nothing
   anywhere else (``missing_allocation``, ``wrong_allocation``,
   ``multi_host_allocation``);
2. an instance in a move and its migration consumer hold one of the states
   the reference model allows for the move's kind, claim strategy and
   status (``missing_move_claim``, ``unexpected_move_claim``, measured
   against the nearest allowed state);
3. no provider's usage exceeds (total - reserved) * allocation_ratio
   (``over_capacity``);
4. DELETED and SHELVED_OFFLOADED instances hold nothing
   (``deleted_instance_holds``, ``shelved_instance_holds``), finished
   migrations, and those of deleted instances, hold nothing
   (``leaked_migration_consumer``), and every consumer
   is an instance or an unfinished migration (``orphan``);
5. a provider's usage equals the sum of its consumers' allocations
   (``usage_mismatch``);
6. no operation is left half done with nobody behind it: an instance
   BUILDING, or with a task state and no unfinished migration, or a move
   still starting (accepted, pre-migrating), whose record has not changed
   for ``stale_after`` seconds (``interrupted_operation``; the host's
   ``rtf compute reconcile`` settles it).

A check is a snapshot of a moving system: records and placement are two
databases read one after the other, and a move or a delete between those
reads looks exactly like a violation (an instance marked DELETED a moment
before its claim is removed). No single transaction can span both stores,
so the check is taken twice instead: the first pass finds candidates, a
second full pass ``recheck_delay`` seconds later re-reads everything, and
only findings that are present, identical (same amounts), in both passes
are reported. An operation in flight finishes or moves on in between and
its finding changes or disappears; a real violation stays put.

Placement itself is read provider by provider, so one pass may see an
instance's allocations partly before and partly after a move's claim
step. A soak once saw the same torn read in both passes: records read
before a move began, some providers read after its claim. So each pass
reads the records again after placement: an instance whose record or
migrations changed in between is *unsettled* and is not judged in that
pass (its allocations may come from either side of the change), nor are
its unfinished or changed migrations. A tear whose records do not change
meanwhile (a claim step of a move already recorded) is left to the two
passes, as before.

About 400 lines on purpose: the snapshot and the six checks over it are
read together (each check's message names what the snapshot holds).
"""

from __future__ import annotations

import datetime
import functools
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from rtframework import reference
from rtframework.compute import values as v
from rtframework.compute.store import ComputeStore
from rtframework.placement import errors as perrors
from rtframework.placement import types as t
from rtframework.placement.backend import PlacementBackend

MISSING_ALLOCATION = "missing_allocation"
WRONG_ALLOCATION = "wrong_allocation"
MULTI_HOST_ALLOCATION = "multi_host_allocation"
MISSING_MOVE_CLAIM = "missing_move_claim"
UNEXPECTED_MOVE_CLAIM = "unexpected_move_claim"
OVER_CAPACITY = "over_capacity"
DELETED_INSTANCE_HOLDS = "deleted_instance_holds"
SHELVED_INSTANCE_HOLDS = "shelved_instance_holds"
LEAKED_MIGRATION_CONSUMER = "leaked_migration_consumer"
ORPHAN = "orphan"
USAGE_MISMATCH = "usage_mismatch"
INTERRUPTED_OPERATION = "interrupted_operation"

KINDS = (MISSING_ALLOCATION, WRONG_ALLOCATION, MULTI_HOST_ALLOCATION, MISSING_MOVE_CLAIM,
         UNEXPECTED_MOVE_CLAIM, OVER_CAPACITY, DELETED_INSTANCE_HOLDS, SHELVED_INSTANCE_HOLDS,
         LEAKED_MIGRATION_CONSUMER, ORPHAN, USAGE_MISMATCH, INTERRUPTED_OPERATION)

# Seconds a record may stay in the middle of an operation before it counts
# as interrupted: far longer than any step of a boot or a move start takes.
STALE_AFTER = 60.0
# Move statuses of a start in progress (a copy or a wait for the user may
# rightly last long; a start only claims and records).
STARTING_STATUSES = frozenset({"accepted", "pre-migrating"})

Alloc = dict[str, dict[str, int]]


@dataclass(frozen=True)
class Violation:
    """One broken invariant: what, which consumer and provider, the numbers."""

    kind: str
    consumer_uuid: str | None
    provider_uuid: str | None
    detail: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.detail}"


@dataclass(frozen=True)
class Snapshot:
    """Everything the checks look at, read once."""

    instances: Mapping[str, v.Instance]
    migrations: Mapping[str, v.Migration]
    node_roots: Mapping[tuple[str, str], str]  # (host, node) -> root provider
    root_of: Mapping[str, str]  # provider -> its root
    names: Mapping[str, str]  # provider -> name
    inventories: Mapping[str, Mapping[str, t.Inventory]]
    usages: Mapping[str, Mapping[str, int]]
    held: Mapping[str, Alloc]  # consumer -> provider -> class -> amount
    pools: tuple[reference.Pool, ...] = ()  # storage pools and the trees they serve
    taken_at: float = field(default_factory=time.monotonic)
    # When the records were read (None: unknown, staleness is not judged).
    read_at: datetime.datetime | None = None
    # Instances whose record or migrations changed while placement was
    # read, and those migrations: consumers not judged in this snapshot.
    unsettled: frozenset[str] = frozenset()
    # Instances created meanwhile (unsettled too; not in ``instances``).
    created: frozenset[str] = frozenset()

    def moves_of(self, instance_uuid: str) -> list[v.Migration]:
        """The instance's unfinished migrations, in the order read."""
        return list(self._unfinished_by_instance.get(instance_uuid, ()))

    @functools.cached_property
    def _unfinished_by_instance(self) -> dict[str, list[v.Migration]]:
        # Built once: the checks ask for every instance, and a long soak
        # keeps thousands of migration records.
        index: dict[str, list[v.Migration]] = {}
        for migration in self.migrations.values():
            if not migration.finished:
                index.setdefault(migration.instance_uuid, []).append(migration)
        return index


def take_snapshot(backend: PlacementBackend, store: ComputeStore, *,
                  own_trees_only: bool = False) -> Snapshot:
    """Read the records, then every provider's inventory, usage and
    allocations, then the instance and migration records again (to tell
    which instances were unsettled meanwhile). With ``own_trees_only``
    only the trees of the records' compute nodes and the storage pools
    serving them are read: for a placement that other clouds share (their
    consumers would be orphans here)."""
    read_at = datetime.datetime.now(datetime.timezone.utc)
    instances = {i.uuid: i for i in store.list_instances()}
    migrations = {m.uuid: m for m in store.list_migrations()}
    node_roots = {(n.host, n.nodename): n.uuid for n in store.list_compute_nodes()}
    pools = read_pools(backend)
    if own_trees_only:
        ours = set(node_roots.values())
        pools = tuple(p for p in pools if p.roots & ours)
        providers = [p for root in sorted(ours | {p.uuid for p in pools})
                     for p in backend.list_providers(t.ProviderQuery(in_tree=root))]
    else:
        providers = backend.list_providers()
    root_of, names, inventories, usages = {}, {}, {}, {}
    held: dict[str, Alloc] = {}
    for provider in providers:
        try:
            inventories[provider.uuid], usages[provider.uuid], on_it = _provider_state(
                backend, provider.uuid)
        except perrors.ProviderNotFound:
            continue  # deleted while we read: it held nothing
        root_of[provider.uuid] = provider.root_uuid or provider.uuid
        names[provider.uuid] = provider.name
        for consumer, resources in on_it.items():
            kept = {rc: int(n) for rc, n in resources.items() if n}
            if kept:
                held.setdefault(consumer, {})[provider.uuid] = kept
    unsettled, created = _changed_since(store, instances, migrations)
    return Snapshot(instances, migrations, node_roots, root_of, names, inventories, usages, held,
                    pools, read_at=read_at, unsettled=unsettled, created=created)


def _changed_since(store: ComputeStore, instances: Mapping[str, v.Instance],
                   migrations: Mapping[str, v.Migration],
                   ) -> tuple[frozenset[str], frozenset[str]]:
    """Instances whose record, or one of whose migrations, is not as read
    any more, and those of their migrations that changed or are unfinished
    (the consumers of their moves; a finished one left alone is judged);
    and apart, the instances created since."""
    now = {i.uuid: i for i in store.list_instances()}
    changed = {uuid for uuid in instances.keys() | now.keys()
               if instances.get(uuid) != now.get(uuid)}
    after = {m.uuid: m for m in store.list_migrations()}
    latest = {**migrations, **after}
    moved = {uuid for uuid in latest if migrations.get(uuid) != after.get(uuid)}
    changed |= {latest[uuid].instance_uuid for uuid in moved}
    unsettled = changed | {uuid for uuid, m in latest.items()
                           if m.instance_uuid in changed and (uuid in moved or not m.finished)}
    return frozenset(unsettled), frozenset(now.keys() - instances.keys())


def _provider_state(backend: PlacementBackend, uuid: str, attempts: int = 5):
    """One provider's inventory, usage and allocations, read again while
    the usage and the sum of the allocations disagree.

    They are separate reads: a write between the usage and the allocations
    (a claim, a consumer moving off) would otherwise show as a usage
    mismatch. Provider generations cannot tell: Placement does not bump
    the generation of a provider a consumer moves off. A mismatch that
    is real stays through every attempt and is reported.
    """
    for _ in range(attempts):
        inventories = backend.get_inventories(uuid).inventories
        usage = backend.get_provider_usages(uuid)
        on_it = backend.get_provider_allocations(uuid)
        if _used(usage) == t.summed(on_it):
            break
    return inventories, usage, on_it


def _used(usage: Mapping[str, int]) -> dict[str, int]:
    return {rc: int(n) for rc, n in usage.items() if n}


def read_pools(backend: PlacementBackend) -> tuple[reference.Pool, ...]:
    """Every storage pool (a provider with the sharing trait), its classes
    and the roots of the trees sharing one of its aggregates."""
    pools = []
    sharing = t.ProviderQuery(required_traits=frozenset({t.SHARING_TRAIT}))
    for pool in backend.list_providers(sharing):
        try:
            classes = frozenset(backend.get_inventories(pool.uuid).inventories)
            aggregates = backend.get_provider_aggregates(pool.uuid).aggregates
        except perrors.ProviderNotFound:
            continue  # deleted while we read: it serves nobody
        members = backend.list_providers(
            t.ProviderQuery(member_of=(frozenset(aggregates),))) if aggregates else []
        roots = {m.root_uuid or m.uuid for m in members} - {pool.uuid}
        pools.append(reference.Pool(pool.uuid, classes, frozenset(roots)))
    return tuple(pools)


def check_snapshot(snap: Snapshot, stale_after: float = STALE_AFTER) -> list[Violation]:
    """Every violation visible in one snapshot (no re-check)."""
    found: list[Violation] = []
    found += _consumers(snap)
    for instance in snap.instances.values():
        if instance.uuid in snap.unsettled:
            continue
        moves = snap.moves_of(instance.uuid)
        if moves:
            for migration in moves:
                found += _move(snap, instance, migration)
        else:
            found += _resting(snap, instance)
    found += _providers(snap)
    found += _interrupted(snap, stale_after)
    return found


def check(
    backend: PlacementBackend, store: ComputeStore, *, recheck_delay: float = 0.5,
    stale_after: float = STALE_AFTER, own_trees_only: bool = False,
    unjudged: set[str] | None = None,
) -> list[Violation]:
    """Violations seen in two passes ``recheck_delay`` seconds apart (see the
    module docstring); ``recheck_delay`` < 0 reports a single pass.
    ``own_trees_only``: see :func:`take_snapshot`. ``unjudged``, when
    given, receives the instances a pass left unjudged because they
    changed while it read (unsettled), or were created meanwhile: a
    finding about them needs another check."""
    def snapshot() -> Snapshot:
        snap = take_snapshot(backend, store, own_trees_only=own_trees_only)
        if unjudged is not None:
            unjudged.update(snap.unsettled & snap.instances.keys(), snap.created)
        return snap

    first = check_snapshot(snapshot(), stale_after)
    if not first or recheck_delay < 0:
        return first
    time.sleep(recheck_delay)
    second = set(check_snapshot(snapshot(), stale_after))
    return [f for f in first if f in second]


# -- the checks ------------------------------------------------------------------
def _fmt(alloc: Mapping[str, Mapping[str, int]]) -> str:
    return "{" + ", ".join(
        f"{p}: " + ", ".join(f"{rc}={n}" for rc, n in sorted(res.items()))
        for p, res in sorted(alloc.items())) + "}"


def _consumers(snap: Snapshot) -> list[Violation]:
    """Invariant 4: who may hold anything at all."""
    found = []
    for consumer, alloc in sorted(snap.held.items()):
        if consumer in snap.unsettled:
            continue
        migration = snap.migrations.get(consumer)
        instance = snap.instances.get(consumer)
        if migration is not None:
            owner = snap.instances.get(migration.instance_uuid)
            if migration.finished or owner is None or owner.vm_state == v.DELETED:
                found.append(Violation(
                    LEAKED_MIGRATION_CONSUMER, consumer, None,
                    f"{migration.migration_type} {consumer} of instance "
                    f"{migration.instance_uuid} is {migration.status} but still holds "
                    f"{_fmt(alloc)}"
                    + ("" if migration.finished else "; its instance is deleted")))
        elif instance is None:
            found.append(Violation(ORPHAN, consumer, None,
                                   f"consumer {consumer} is neither an instance nor a "
                                   f"migration and holds {_fmt(alloc)}"))
        elif instance.vm_state == v.DELETED or (
                instance.vm_state == v.SHELVED_OFFLOADED and instance.task_state is None):
            kind = DELETED_INSTANCE_HOLDS if instance.vm_state == v.DELETED \
                else SHELVED_INSTANCE_HOLDS
            found.append(Violation(kind, consumer, None,
                                   f"{instance.vm_state} instance {consumer} "
                                   f"({instance.name}) holds {_fmt(alloc)}"))
    return found


def _tree_of(snap: Snapshot, host: str | None, node: str | None) -> str | None:
    return snap.node_roots.get((host or "", node or ""))


def _resting(snap: Snapshot, instance: v.Instance) -> list[Violation]:
    """Invariant 1: an instance not in a move holds what the reference
    model allows for its vm_state and task_state."""
    if instance.vm_state in v.GONE_VM_STATES and instance.task_state is None:
        return []  # invariant 4 covers what it still holds
    held = snap.held.get(instance.uuid, {})
    own = _tree_of(snap, instance.host, instance.node)
    allowed = reference.at_rest(instance.vm_state, instance.task_state, own,
                                instance.flavor.resources, snap.pools)
    have = reference.by_root(held, snap.root_of)
    if any(h.matches(have, {}) for h in allowed):
        return []
    found = []
    serving = {p.uuid: p.classes for p in snap.pools if own in p.roots}

    def at_home(provider: str, resources: Mapping[str, int]) -> bool:
        root = snap.root_of.get(provider, provider)
        return root == own or set(resources) <= serving.get(root, frozenset())

    outside = {p: r for p, r in held.items() if not at_home(p, r)}
    state = instance.vm_state + (f" ({instance.task_state})" if instance.task_state else "")
    if outside:
        found.append(Violation(
            MULTI_HOST_ALLOCATION, instance.uuid, sorted(outside)[0],
            f"{state} instance {instance.uuid} ({instance.name}) of "
            f"{instance.host}/{instance.node} is not moving but holds {_fmt(outside)} "
            "outside its own node's tree"
            + (" and the storage pools serving it" if serving else "")))
    inside = reference.by_root({p: r for p, r in held.items() if p not in outside},
                               snap.root_of)
    if any(h.matches(inside, {}) for h in allowed):
        return found  # only the part outside its own tree is wrong
    wanted = {rc: int(n) for rc, n in instance.flavor.resources.items() if n}
    total = reference.add(*({own or "?": r} for r in inside.values())).get(own or "?", {})
    where = "there" + (" or in its storage pools" if serving else "")
    if not total:
        found.append(Violation(
            MISSING_ALLOCATION, instance.uuid, own,
            f"{state} instance {instance.uuid} ({instance.name}) on "
            f"{instance.host}/{instance.node} holds nothing {where}; its flavor "
            f"{instance.flavor.name} needs {_fmt({own or '?': wanted})}"))
    else:
        found.append(Violation(
            WRONG_ALLOCATION, instance.uuid, own,
            f"{state} instance {instance.uuid} ({instance.name}) holds {total} on its "
            f"node {instance.host}/{instance.node}"
            + (" and its storage pools" if serving else "")
            + f"; its flavor {instance.flavor.name} is {wanted}"))
    return found


def _move(snap: Snapshot, instance: v.Instance, migration: v.Migration) -> list[Violation]:
    """Invariant 2: an instance in a move and its migration consumer hold
    one of the states the reference model allows for the move's status."""
    if instance.vm_state == v.DELETED:
        return []  # invariant 4 covers what it still holds
    source = _tree_of(snap, migration.source_host, migration.source_node)
    dest = _tree_of(snap, migration.dest_host, migration.dest_node)
    have = {instance.uuid: reference.by_root(snap.held.get(instance.uuid, {}), snap.root_of),
            migration.uuid: reference.by_root(snap.held.get(migration.uuid, {}), snap.root_of)}
    allowed = reference.in_move(
        migration.migration_type, migration.claim_strategy, migration.status,
        source_root=source, dest_root=dest, f_old=migration.old_flavor.resources,
        f_new=migration.new_flavor.resources, pools=snap.pools)
    if any(h.matches(have[instance.uuid], have[migration.uuid]) for h in allowed):
        return []
    best = reference.nearest(allowed, have[instance.uuid], have[migration.uuid])
    if best is None:
        best = reference.NOTHING
        ways = "nothing (the record's status or nodes allow no holding)"
    else:
        ways = " or ".join(dict.fromkeys(h.name for h in allowed))
    found = []
    for consumer, wanted in ((instance.uuid, best.instance), (migration.uuid, best.migration)):
        for provider in sorted(set(wanted) | set(have[consumer])):
            want, got = wanted.get(provider, {}), have[consumer].get(provider, {})
            if want == got:
                continue
            short = any(got.get(rc, 0) < n for rc, n in want.items())
            found.append(Violation(
                MISSING_MOVE_CLAIM if short else UNEXPECTED_MOVE_CLAIM, consumer, provider,
                f"{migration.migration_type} {migration.uuid} of instance {instance.uuid} "
                f"is {migration.status} ({migration.claim_strategy}): consumer {consumer} "
                f"should hold {want} on provider {provider} but holds {got} "
                f"(allowed: {ways})"))
    return found


def _providers(snap: Snapshot) -> list[Violation]:
    """Invariants 3 and 5, provider by provider."""
    found = []
    sums: dict[str, dict[str, int]] = {}
    for alloc in snap.held.values():
        for provider, resources in alloc.items():
            slot = sums.setdefault(provider, {})
            for rc, n in resources.items():
                slot[rc] = slot.get(rc, 0) + n
    for provider, inventories in sorted(snap.inventories.items()):
        used = _used(snap.usages.get(provider, {}))
        name = snap.names.get(provider, provider)
        for rc, amount in sorted(used.items()):
            inventory = inventories.get(rc)
            if inventory is not None and amount > inventory.capacity:
                found.append(Violation(
                    OVER_CAPACITY, None, provider,
                    f"provider {name} ({provider}) uses {amount} {rc} of capacity "
                    f"{inventory.capacity:g} (total {inventory.total}, reserved "
                    f"{inventory.reserved}, ratio {inventory.allocation_ratio:g})"))
        summed = sums.get(provider, {})
        if used != summed:
            found.append(Violation(
                USAGE_MISMATCH, None, provider,
                f"provider {name} ({provider}) reports usage {used} but its consumers' "
                f"allocations add up to {summed}"))
    return found


def _interrupted(snap: Snapshot, stale_after: float) -> list[Violation]:
    """Invariant 6: operations nobody is running any more. The record's
    state and time are in the detail, so a record that moved on between
    the two passes of a check is not reported."""
    found: list[Violation] = []
    read_at = snap.read_at
    if read_at is None:
        return found

    def stale(record) -> bool:
        return (read_at - record.updated_at).total_seconds() >= stale_after

    for instance in snap.instances.values():
        if instance.vm_state == v.DELETED or snap.moves_of(instance.uuid):
            continue
        if (instance.vm_state == v.BUILDING or instance.task_state) and stale(instance):
            what = "boot" if instance.vm_state == v.BUILDING else instance.task_state
            found.append(Violation(
                INTERRUPTED_OPERATION, instance.uuid, None,
                f"instance {instance.uuid} ({instance.name}) on host {instance.host} is "
                f"{instance.vm_state} (task {instance.task_state}) with no migration since "
                f"{instance.updated_at.isoformat(timespec='seconds')}: its {what} was "
                "interrupted"))
    for migration in snap.migrations.values():
        if migration.status in STARTING_STATUSES and stale(migration):
            found.append(Violation(
                INTERRUPTED_OPERATION, migration.instance_uuid, None,
                f"{migration.migration_type} {migration.uuid} from host "
                f"{migration.source_host} has been {migration.status} since "
                f"{migration.updated_at.isoformat(timespec='seconds')}: its start was "
                "interrupted"))
    return found
