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

``check_move_invariants`` covers moves only, one read per consumer:

* an unfinished move's instance and migration consumers hold one of the
  states the reference model (:mod:`rtframework.reference`) allows for its
  status (a heal that deleted a half shows up here as a missing claim);
* a migration that ended holds nothing under its own uuid (no leaked
  migration consumer);
* a deleted instance holds nothing.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from oslo_config import cfg

from rtframework import heal_rules, history, invariants, reference, retry
from rtframework.compute import errors as cerrors
from rtframework.compute import values as v
from rtframework.compute.store import ComputeStore
from rtframework.moves import claims
from rtframework.placement import errors as perrors
from rtframework.placement import types as t
from rtframework.placement.backend import PlacementBackend

LOG = logging.getLogger(__name__)

MISSING_MOVE_CLAIM = "missing_move_claim"
UNEXPECTED_MOVE_CLAIM = "unexpected_move_claim"
LEAKED_MIGRATION_CONSUMER = "leaked_migration_consumer"
DELETED_INSTANCE_HOLDS = "deleted_instance_holds"


@dataclass(frozen=True)
class Finding:
    kind: str
    consumer_uuid: str
    detail: str
    provider_uuid: str | None = None
    migration_uuid: str | None = None

    def __str__(self) -> str:
        return f"{self.kind}: {self.detail}"


def check_move_invariants(
    backend: PlacementBackend, store: ComputeStore, conf: cfg.ConfigOpts | None = None
) -> list[Finding]:
    """Everything that is wrong with the claims of moves, in record order,
    judged by the reference model (:mod:`rtframework.reference`)."""
    findings: list[Finding] = []
    roots: dict[str, str] = {}
    pools: tuple[reference.Pool, ...] | None = None
    for migration in store.list_migrations():
        if migration.finished:
            findings += _leaked(backend, migration)
        else:
            if pools is None:
                pools = invariants.read_pools(backend)
            findings += _halves(backend, store, migration, roots, pools)
    for instance in store.list_instances(vm_states=[v.DELETED]):
        held = _held(backend, instance.uuid)
        if held:
            findings.append(Finding(DELETED_INSTANCE_HOLDS, instance.uuid,
                                    f"deleted instance {instance.uuid} still holds {held}"))
    return findings


def _held(backend: PlacementBackend, consumer: str) -> reference.Alloc:
    return reference.add(backend.get_consumer_allocations(consumer).allocations)


def _leaked(backend: PlacementBackend, migration: v.Migration) -> list[Finding]:
    held = _held(backend, migration.uuid)
    if not held:
        return []
    return [Finding(
        LEAKED_MIGRATION_CONSUMER, migration.uuid,
        f"{migration.migration_type} {migration.uuid} of instance {migration.instance_uuid} "
        f"is {migration.status} but its consumer still holds {held}",
        migration_uuid=migration.uuid)]


def _node_root(store: ComputeStore, host: str | None, node: str | None) -> str | None:
    if not host or not node:
        return None
    try:
        return store.node_root_uuid(host, node)
    except cerrors.ComputeNodeNotFound:
        return None  # the node is gone: nothing may be held on it


def _root_of(backend: PlacementBackend, provider: str, roots: dict[str, str]) -> str:
    if provider not in roots:
        try:
            roots[provider] = backend.get_provider(provider).root_uuid or provider
        except perrors.ProviderNotFound:
            roots[provider] = provider
    return roots[provider]


def _halves(backend: PlacementBackend, store: ComputeStore, migration: v.Migration,
            roots: dict[str, str], pools: tuple[reference.Pool, ...]) -> list[Finding]:
    instance = store.get_instance(migration.instance_uuid)
    allowed = reference.in_move(
        migration.migration_type, migration.claim_strategy, migration.status,
        source_root=_node_root(store, migration.source_host, migration.source_node),
        dest_root=_node_root(store, migration.dest_host, migration.dest_node),
        f_old=migration.old_flavor.resources, f_new=migration.new_flavor.resources,
        instance_deleted=instance.vm_state == v.DELETED, pools=pools)
    have = {}
    for consumer in (instance.uuid, migration.uuid):
        held = _held(backend, consumer)
        have[consumer] = reference.by_root(
            held, {p: _root_of(backend, p, roots) for p in held})
    if any(h.matches(have[instance.uuid], have[migration.uuid]) for h in allowed):
        return []
    best = reference.nearest(allowed, have[instance.uuid], have[migration.uuid]) \
        or reference.NOTHING
    found = []
    for consumer, wanted in ((instance.uuid, best.instance), (migration.uuid, best.migration)):
        for provider in sorted(set(wanted) | set(have[consumer])):
            want, got = wanted.get(provider, {}), have[consumer].get(provider, {})
            if want == got:
                continue
            short = {rc: n for rc, n in want.items() if got.get(rc, 0) < n}
            kind = MISSING_MOVE_CLAIM if short else UNEXPECTED_MOVE_CLAIM
            found.append(Finding(
                kind, consumer,
                f"{migration.migration_type} {migration.uuid} is {migration.status}: consumer "
                f"{consumer} should hold {want} on provider {provider} but holds {got} "
                f"(allowed: {' or '.join(dict.fromkeys(h.name for h in allowed)) or 'nothing'})",
                provider_uuid=provider, migration_uuid=migration.uuid))
    return found


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
        return ("rtf check again; a lasting one is the placement service's own fault "
                "(usage is the sum of allocations)")
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
    stale_after: float = invariants.STALE_AFTER,
) -> list[invariants.Violation]:
    """Orphans, missing, wrong and multi-host allocations, interrupted
    operations, then the audit findings hosts recorded about consumers that
    are still wrong (kind ``host_<kind>``)."""
    found = [f for f in invariants.check(backend, store, recheck_delay=recheck_delay,
                                         stale_after=stale_after)
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


def _holds_nothing_by_record(store: ComputeStore, consumer: str) -> str | None:
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
        why = _holds_nothing_by_record(store, consumer)
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
) -> list[Action]:
    """Make every idle ACTIVE or RESIZED instance (no task, no move) that
    holds nothing, the wrong amounts, or something outside its node hold
    exactly its flavor on its own node. Each write names the consumer
    generation it read, so it fails instead of overwriting a change made
    meanwhile (a new claim names none)."""
    wrong = [f for f in invariants.check(backend, store, recheck_delay=recheck_delay)
             if f.kind in HEALABLE_KINDS and f.consumer_uuid]
    actions = []
    for uuid in sorted({f.consumer_uuid for f in wrong if f.consumer_uuid}):
        actions.append(_heal_one(backend, store, uuid, dry_run, who, retries))
    return actions


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
            return Action(uuid, {}, False, f"cannot heal on {where}: {exc}")
        wanted = _flavor_on(backend, instance, root, held.allocations)
        if wanted is None:
            return Action(uuid, {}, False, f"node {where} has no room for flavor "
                          f"{instance.flavor.name} {dict(instance.flavor.resources)}")
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
        return Action(uuid, {}, False, f"refused: {exc}")


def _flavor_on(backend: PlacementBackend, instance: v.Instance, root: str,
               held: t.Allocations) -> claims.Alloc | None:
    """Where the instance's flavor lies in its node's tree: what it holds
    there if that is exactly its flavor, else a candidate of the tree."""
    tree = {p.uuid for p in backend.list_providers(t.ProviderQuery(in_tree=root))}
    inside = claims.normalized({p: r for p, r in held.items() if p in tree})
    wanted = {rc: n for rc, n in instance.flavor.resources.items() if n}
    total: dict[str, int] = {}
    for resources in inside.values():
        for rc, n in resources.items():
            total[rc] = total.get(rc, 0) + n
    if inside and total == wanted:
        return inside
    found = backend.get_allocation_candidates(
        t.CandidateQuery(resources=dict(wanted), in_tree=root))
    if found.allocation_requests:
        return claims.normalized(found.allocation_requests[0].allocations)
    if set(wanted) <= set(backend.get_inventories(root).inventories):
        # No room left beside what it holds now: the write replaces that, and
        # placement refuses it if the node really cannot hold the flavor.
        return claims.on_root(root, wanted)
    return None
