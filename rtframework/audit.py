"""Invariants of the accounting, checked against placement and the records.

Each check returns typed findings that say what is wrong and where; it
changes nothing. ``check_move_invariants`` covers moves:

* while a move runs (migrating, running, finished) both of its halves are
  held exactly as its claim strategy says (a heal that deleted one shows
  up here as a missing claim);
* a migration that ended holds nothing under its own uuid (no leaked
  migration consumer);
* a deleted instance holds nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from oslo_config import cfg

from rtframework.compute import values as v
from rtframework.compute.store import ComputeStore
from rtframework.moves import claims, common, state
from rtframework.placement.backend import PlacementBackend

MISSING_MOVE_CLAIM = "missing_move_claim"
UNEXPECTED_MOVE_CLAIM = "unexpected_move_claim"
LEAKED_MIGRATION_CONSUMER = "leaked_migration_consumer"
DELETED_INSTANCE_HOLDS = "deleted_instance_holds"

# Statuses in which a move certainly holds both halves; the ones in
# between (pre-migrating, confirming, ...) may be on either side of a write.
HOLDING_STATUSES = frozenset({state.MIGRATING, state.RUNNING, state.FINISHED, "post-migrating"})


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
    backend: PlacementBackend, store: ComputeStore, conf: cfg.ConfigOpts
) -> list[Finding]:
    """Everything that is wrong with the claims of moves, in record order."""
    ctx = common.MoveContext(conf, backend, store)
    findings: list[Finding] = []
    for migration in store.list_migrations():
        if migration.finished:
            findings += _leaked(backend, migration)
        elif migration.status in HOLDING_STATUSES and migration.dest_node:
            findings += _halves(ctx, migration)
    for instance in store.list_instances(vm_states=[v.DELETED]):
        held = claims.normalized(backend.get_consumer_allocations(instance.uuid).allocations)
        if held:
            findings.append(Finding(DELETED_INSTANCE_HOLDS, instance.uuid,
                                    f"deleted instance {instance.uuid} still holds {held}"))
    return findings


def _leaked(backend: PlacementBackend, migration: v.Migration) -> list[Finding]:
    held = claims.normalized(backend.get_consumer_allocations(migration.uuid).allocations)
    if not held:
        return []
    return [Finding(
        LEAKED_MIGRATION_CONSUMER, migration.uuid,
        f"{migration.migration_type} {migration.uuid} of instance {migration.instance_uuid} "
        f"is {migration.status} but its consumer still holds {held}",
        migration_uuid=migration.uuid)]


def _halves(ctx: common.MoveContext, migration: v.Migration) -> list[Finding]:
    move = common.claim_for(ctx, migration)
    expected = claims.STRATEGIES[migration.claim_strategy](ctx.backend).holding(move)
    found = []
    for consumer, wanted in expected.items():
        held = claims.normalized(ctx.backend.get_consumer_allocations(consumer).allocations)
        for provider in sorted(set(wanted) | set(held)):
            want, have = wanted.get(provider, {}), held.get(provider, {})
            if want == have:
                continue
            short = {rc: n for rc, n in want.items() if have.get(rc, 0) < n}
            kind = MISSING_MOVE_CLAIM if short else UNEXPECTED_MOVE_CLAIM
            found.append(Finding(
                kind, consumer,
                f"{migration.migration_type} {migration.uuid} is {migration.status}: consumer "
                f"{consumer} should hold {want} on provider {provider} but holds {have}",
                provider_uuid=provider, migration_uuid=migration.uuid))
    return found
