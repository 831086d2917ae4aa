"""Invariants of the accounting, checked against placement and the records,
and the operator's audit and heal.

The full invariant checker is :mod:`rtframework.invariants`
(``rtf check``). Here: :func:`audit` (``rtf audit``) lists what an
operator may have to act on (orphans, missing allocations, non-moving
instances on several hosts, and the hosts' own audit findings that still
hold); :func:`delete_orphans` removes orphans, guarded by their consumer
generation; :func:`heal` (``rtf heal``) re-claims the flavor of an ACTIVE
instance that holds nothing. Both record what they change in the
allocation history (who: ``audit`` / ``heal`` unless told otherwise).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from rtframework import claim_request, heal_rules, history, invariants, retry, sharing
from rtframework.compute import errors as cerrors
from rtframework.compute import values as v
from rtframework.compute.store import ComputeStore
from rtframework.moves import claims
from rtframework.placement import errors as perrors
from rtframework.placement import types as t
from rtframework.placement.backend import PlacementBackend

LOG = logging.getLogger(__name__)

# -- audit, orphan removal, heal ---------------------------------------------------
# What ``rtf audit`` lists, of the invariant checker's kinds.
AUDIT_KINDS = frozenset({
    invariants.ORPHAN, invariants.LEAKED_MIGRATION_CONSUMER, invariants.MISSING_ALLOCATION,
    invariants.WRONG_ALLOCATION, invariants.MULTI_HOST_ALLOCATION,
    invariants.DELETED_INSTANCE_HOLDS, invariants.SHELVED_INSTANCE_HOLDS,
    invariants.INTERRUPTED_OPERATION,
})
# Consumers nobody owns: what ``rtf audit --delete`` removes.
ORPHAN_KINDS = frozenset({invariants.ORPHAN, invariants.LEAKED_MIGRATION_CONSUMER})
# Consumers whose record says they hold nothing: ``rtf audit --delete`` removes them too.
REMOVABLE_KINDS = ORPHAN_KINDS | {invariants.DELETED_INSTANCE_HOLDS,
                                  invariants.SHELVED_INSTANCE_HOLDS}
# Idle live instances holding the wrong thing: ``rtf heal`` writes their flavor back.
HEALABLE_KINDS = frozenset({invariants.MISSING_ALLOCATION, invariants.WRONG_ALLOCATION,
                            invariants.MULTI_HOST_ALLOCATION})
HOST_FINDING_PREFIX = "host_"


def fix_for(finding: invariants.Violation, store: ComputeStore) -> str:
    """The command that repairs ``finding`` (each kind has one)."""
    kind = finding.kind.removeprefix(HOST_FINDING_PREFIX)
    if kind in REMOVABLE_KINDS:
        return "rtf audit --delete"
    if kind in HEALABLE_KINDS:
        return "rtf heal"
    if kind == invariants.OVER_CAPACITY:
        return "rtf migrate or rtf delete instances on it until it fits"
    if kind == invariants.USAGE_MISMATCH:
        return ("rtf db recount-usage (sql backend); with OpenStack Placement a lasting "
                "one is the service's own fault")
    hosts = _hosts_of(store, finding.consumer_uuid)
    if kind in (invariants.INTERRUPTED_OPERATION, invariants.MISSING_MOVE_CLAIM,
                invariants.UNEXPECTED_MOVE_CLAIM, heal_rules.UNOWNED,
                heal_rules.STALE_MIGRATION, heal_rules.MULTI_NODE):
        where = " or ".join(f"rtf compute reconcile --host {h}" for h in hosts)
        return where or "rtf compute reconcile --host HOST (the instance's host)"
    return "rtf check (no known fix for this kind)"


def _hosts_of(store: ComputeStore, consumer: str | None) -> list[str]:
    """The hosts that settle ``consumer``'s operations: its own host, and
    both ends of its unfinished moves."""
    if not consumer:
        return []
    migrations = store.list_migrations(uuids=[consumer])
    instance_uuid = migrations[0].instance_uuid if migrations else consumer
    hosts = [i.host for i in store.list_instances(uuids=[instance_uuid]) if i.host]
    for m in store.list_migrations(instance_uuid=instance_uuid,
                                   statuses=v.UNFINISHED_MIGRATION_STATUSES):
        hosts += [h for h in (m.source_host, m.dest_host) if h]
    return list(dict.fromkeys(hosts))


def audit(
    backend: PlacementBackend, store: ComputeStore, *, recheck_delay: float = 0.5,
    stale_after: float = invariants.STALE_AFTER, unjudged: set[str] | None = None,
) -> list[invariants.Violation]:
    """Orphans, missing, wrong and multi-host allocations, interrupted
    operations, then the audit findings hosts recorded about consumers that
    are still wrong (kind ``host_<kind>``). ``unjudged``: see
    :func:`invariants.check`."""
    found = [f for f in invariants.check(backend, store, recheck_delay=recheck_delay,
                                         stale_after=stale_after, unjudged=unjudged)
             if f.kind in AUDIT_KINDS]
    flagged = {f.consumer_uuid for f in found}
    seen = set()
    for record in store.list_audit_findings():
        key = (record.consumer_uuid, record.host, record.kind)
        if record.consumer_uuid in flagged and key not in seen:
            seen.add(key)
            found.append(invariants.Violation(
                HOST_FINDING_PREFIX + record.kind, record.consumer_uuid, None,
                f"host {record.host} reported: {record.detail}"))
    return found


@dataclass(frozen=True)
class Action:
    """One change audit or heal made (or, in a dry run, would make)."""

    consumer_uuid: str
    allocations: t.Allocations  # what was removed (orphans) or claimed (heal)
    done: bool
    detail: str
    # It had to change and could not (no room, its node gone, refused); an
    # instance that is busy or fine by now is not a failure.
    failed: bool = False


def delete_orphans(
    backend: PlacementBackend, store: ComputeStore, findings: list[invariants.Violation],
    *, who: str = "audit", retries: int = 10,
) -> list[Action]:
    """Remove what every consumer among ``findings`` holds that may hold
    nothing (no record, a finished migration, a deleted or an idle shelved
    instance), each in a consumer-generation guarded write after reading
    the record again."""
    actions = []
    for consumer in sorted({f.consumer_uuid for f in findings
                            if f.kind in REMOVABLE_KINDS and f.consumer_uuid}):
        actions.append(_remove_orphan(backend, store, consumer, who, retries))
    return actions


def holds_nothing_by_record(store: ComputeStore, consumer: str) -> str | None:
    """Why ``consumer``'s record says it may hold nothing (None: it may hold)."""
    migrations = store.list_migrations(uuids=[consumer])
    if migrations:
        owner = store.list_instances(uuids=[migrations[0].instance_uuid])
        if migrations[0].finished:
            return f"{migrations[0].migration_type} {migrations[0].status}"
        if not owner or owner[0].vm_state == v.DELETED:
            return f"{migrations[0].migration_type} of a deleted instance"
        return None
    instances = store.list_instances(uuids=[consumer])
    if not instances:
        return "orphan"
    instance = instances[0]
    if instance.vm_state == v.DELETED:
        return "deleted instance"
    if instance.vm_state == v.SHELVED_OFFLOADED and instance.task_state is None:
        return f"shelved instance on {instance.host or 'no host'}"
    return None


def _remove_orphan(backend: PlacementBackend, store: ComputeStore, consumer: str, who: str,
                   retries: int) -> Action:
    def attempt() -> Action:
        # Allocations (and their generation) first, then the record: a
        # write made after the record changed fails on the generation.
        held = backend.get_consumer_allocations(consumer)
        if not held.allocations:
            return Action(consumer, {}, False, "holds nothing any more")
        why = holds_nothing_by_record(store, consumer)
        if why is None:
            return Action(consumer, {}, False, "may hold allocations again (record changed)")
        backend.write_allocations([held.emptied()])
        reason = f"{why}: removed by {who}"
        claims.log_change(consumer, held.allocations, {}, reason)
        return Action(consumer, claims.normalized(held.allocations), True, reason)

    with history.recording(store, who):
        return retry.on_conflict(attempt, retries, f"remove orphan {consumer}")


def heal(
    backend: PlacementBackend, store: ComputeStore, *, dry_run: bool = False,
    who: str = "heal", recheck_delay: float = 0.5, retries: int = 10,
    unjudged: set[str] | None = None, instance: str | None = None,
    max_count: int | None = None, left: set[str] | None = None,
) -> list[Action]:
    """Make every idle ACTIVE or RESIZED instance (no task, no move) that
    holds nothing, the wrong amounts, or something outside its node hold
    exactly its flavor on its own node. Each write names the consumer
    generation it read, so it fails instead of overwriting a change made
    meanwhile (a new claim names none). ``unjudged``: see
    :func:`rtframework.invariants.check` (such instances are not healed).

    ``instance``: only this instance (uuid). ``max_count``: at most this
    many instances, in uuid order; the ones left are added to ``left``."""
    wrong = [f for f in invariants.check(backend, store, recheck_delay=recheck_delay,
                                         unjudged=unjudged)
             if f.kind in HEALABLE_KINDS and f.consumer_uuid
             and (instance is None or f.consumer_uuid == instance)]
    todo = sorted({f.consumer_uuid for f in wrong if f.consumer_uuid})
    if max_count is not None:
        todo, rest = todo[:max_count], todo[max_count:]
        if left is not None:
            left.update(rest)
    return [_heal_one(backend, store, uuid, dry_run, who, retries) for uuid in todo]


def _idle(store: ComputeStore, uuid: str) -> v.Instance | None:
    instance = store.get_instance(uuid)
    if instance.vm_state not in (v.ACTIVE, v.RESIZED) or instance.task_state is not None:
        return None
    if store.list_migrations(instance_uuid=uuid, statuses=v.UNFINISHED_MIGRATION_STATUSES):
        return None
    return instance


def _heal_one(backend: PlacementBackend, store: ComputeStore, uuid: str, dry_run: bool,
              who: str, retries: int) -> Action:
    def attempt() -> Action:
        held = backend.get_consumer_allocations(uuid)
        instance = _idle(store, uuid)
        if instance is None:
            return Action(uuid, {}, False, "is busy or not live any more; left alone")
        where = f"{instance.host}/{instance.node}"
        try:
            root = store.node_root_uuid(instance.host or "", instance.node or "")
        except cerrors.ComputeNodeNotFound as exc:  # the node is gone
            return Action(uuid, {}, False, f"cannot heal on {where}: {exc}", failed=True)
        wanted = _flavor_on(backend, instance, root, held.allocations)
        if wanted is None:
            return Action(uuid, {}, False, f"node {where} has no room for flavor "
                          f"{instance.flavor.name} {dict(instance.flavor.resources)}",
                          failed=True)
        before = claims.normalized(held.allocations)
        if before == wanted:
            return Action(uuid, {}, False, "holds its flavor already")
        reason = (f"heal: {instance.vm_state} instance {uuid} ({instance.name}) held "
                  f"{before or 'nothing'}; its flavor on {where}")
        if dry_run:
            return Action(uuid, wanted, False, f"would write ({reason})")
        backend.write_allocations([t.AllocationWrite(
            consumer_uuid=uuid, allocations=wanted, project_id=instance.project_id,
            user_id=instance.user_id, consumer_generation=held.generation)])
        claims.log_change(uuid, held.allocations, wanted, reason)
        return Action(uuid, wanted, True, reason)

    try:
        with history.recording(store, who):
            return retry.on_conflict(attempt, retries, f"heal instance {uuid}")
    except perrors.Conflict as exc:
        return Action(uuid, {}, False, f"refused: {exc}", failed=True)


def _flavor_on(backend: PlacementBackend, instance: v.Instance, root: str,
               held: t.Allocations) -> claims.Alloc | None:
    """Where the instance's flavor lies in its node's tree (and the storage
    pools serving it): what it holds there if that is exactly its flavor,
    else a candidate, asked for as a claim on the node asks."""
    tree = sharing.node_and_pools(backend, root)
    inside = claims.normalized({p: r for p, r in held.items() if p in tree})
    wanted = {rc: n for rc, n in instance.flavor.resources.items() if n}
    total: dict[str, int] = {}
    for resources in inside.values():
        for rc, n in resources.items():
            total[rc] = total.get(rc, 0) + n
    if inside and total == wanted:
        return inside
    found = backend.get_allocation_candidates(claim_request.for_node(backend, root, wanted))
    if found.allocation_requests:
        return claims.normalized(found.allocation_requests[0].allocations)
    if set(wanted) <= set(backend.get_inventories(root).inventories):
        # No room left beside what it holds now: the write replaces that, and
        # placement refuses it if the node really cannot hold the flavor.
        return claims.on_root(root, wanted)
    return None
