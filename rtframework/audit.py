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

from rtframework import history, invariants, reference, retry
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
    for migration in store.list_migrations():
        if migration.finished:
            findings += _leaked(backend, migration)
        else:
            findings += _halves(backend, store, migration, roots)
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
            roots: dict[str, str]) -> list[Finding]:
    instance = store.get_instance(migration.instance_uuid)
    allowed = reference.in_move(
        migration.migration_type, migration.claim_strategy, migration.status,
        source_root=_node_root(store, migration.source_host, migration.source_node),
        dest_root=_node_root(store, migration.dest_host, migration.dest_node),
        f_old=migration.old_flavor.resources, f_new=migration.new_flavor.resources,
        instance_deleted=instance.vm_state == v.DELETED)
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
                f"(allowed: {' or '.join(h.name for h in allowed) or 'nothing'})",
                provider_uuid=provider, migration_uuid=migration.uuid))
    return found


# -- audit, orphan removal, heal ---------------------------------------------------
# What ``rtf audit`` lists, of the invariant checker's kinds.
AUDIT_KINDS = frozenset({
    invariants.ORPHAN, invariants.LEAKED_MIGRATION_CONSUMER, invariants.MISSING_ALLOCATION,
    invariants.MULTI_HOST_ALLOCATION, invariants.DELETED_INSTANCE_HOLDS,
    invariants.SHELVED_INSTANCE_HOLDS,
})
# Consumers nobody owns: what ``rtf audit --delete`` removes.
ORPHAN_KINDS = frozenset({invariants.ORPHAN, invariants.LEAKED_MIGRATION_CONSUMER})
HOST_FINDING_PREFIX = "host_"


def audit(
    backend: PlacementBackend, store: ComputeStore, *, recheck_delay: float = 0.5
) -> list[invariants.Violation]:
    """Orphans, missing and multi-host allocations, then the audit findings
    hosts recorded about consumers that are still wrong (kind ``host_<kind>``)."""
    found = [f for f in invariants.check(backend, store, recheck_delay=recheck_delay)
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
    """Remove every orphan among ``findings``, each in a consumer-generation
    guarded write after re-reading that it is still an orphan."""
    actions = []
    for consumer in sorted({f.consumer_uuid for f in findings
                            if f.kind in ORPHAN_KINDS and f.consumer_uuid}):
        actions.append(_remove_orphan(backend, store, consumer, who, retries))
    return actions


def _still_orphan(store: ComputeStore, consumer: str) -> bool:
    migrations = store.list_migrations(uuids=[consumer])
    if migrations:
        return migrations[0].finished
    return not store.list_instances(uuids=[consumer])


def _remove_orphan(backend: PlacementBackend, store: ComputeStore, consumer: str, who: str,
                   retries: int) -> Action:
    def attempt() -> Action:
        held = backend.get_consumer_allocations(consumer)
        if not held.allocations:
            return Action(consumer, {}, False, "holds nothing any more")
        if not _still_orphan(store, consumer):
            return Action(consumer, {}, False, "is no longer an orphan")
        backend.write_allocations([t.AllocationWrite(
            consumer_uuid=consumer, allocations={}, project_id=held.project_id or "",
            user_id=held.user_id or "", consumer_generation=held.generation,
            consumer_type=held.consumer_type or "INSTANCE")])
        reason = f"orphan removed by {who}"
        claims.log_change(consumer, held.allocations, {}, reason)
        return Action(consumer, claims.normalized(held.allocations), True, reason)

    with history.recording(store, who):
        return retry.on_conflict(attempt, retries, f"remove orphan {consumer}")


def heal(
    backend: PlacementBackend, store: ComputeStore, *, dry_run: bool = False,
    who: str = "heal", recheck_delay: float = 0.5,
) -> list[Action]:
    """Claim its flavor on its own node for every ACTIVE, idle instance that
    holds nothing. A claim is a write for a new consumer (generation None),
    so it fails instead of doubling anything written meanwhile."""
    missing = [f for f in invariants.check(backend, store, recheck_delay=recheck_delay)
               if f.kind == invariants.MISSING_ALLOCATION and f.consumer_uuid]
    actions = []
    for finding in missing:
        instance = store.get_instance(finding.consumer_uuid)
        if instance.vm_state != v.ACTIVE or instance.task_state is not None:
            continue
        actions.append(_heal_one(backend, store, instance, dry_run, who))
    return actions


def _heal_one(backend: PlacementBackend, store: ComputeStore, instance: v.Instance,
              dry_run: bool, who: str) -> Action:
    where = f"{instance.host}/{instance.node}"
    try:
        root = store.node_root_uuid(instance.host or "", instance.node or "")
    except Exception as exc:  # the node is gone: nothing to claim on
        return Action(instance.uuid, {}, False, f"cannot heal on {where}: {exc}")
    found = backend.get_allocation_candidates(
        t.CandidateQuery(resources=dict(instance.flavor.resources), in_tree=root))
    if not found.allocation_requests:
        return Action(instance.uuid, {}, False,
                      f"node {where} has no room for flavor {instance.flavor.name} "
                      f"{dict(instance.flavor.resources)}")
    wanted = claims.normalized(found.allocation_requests[0].allocations)
    reason = f"heal: ACTIVE instance {instance.uuid} ({instance.name}) held nothing on {where}"
    if dry_run:
        return Action(instance.uuid, wanted, False, f"would claim ({reason})")
    try:
        with history.recording(store, who):
            backend.put_allocations(instance.uuid, wanted, project_id=instance.project_id,
                                    user_id=instance.user_id, consumer_generation=None)
            claims.log_change(instance.uuid, {}, wanted, reason)
    except perrors.ConsumerGenerationConflict:
        return Action(instance.uuid, {}, False, "claimed by someone else meanwhile")
    except perrors.Conflict as exc:
        return Action(instance.uuid, {}, False, f"refused: {exc}")
    return Action(instance.uuid, wanted, True, reason)
