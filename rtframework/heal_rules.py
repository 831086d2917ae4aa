"""What a host's periodic heal may do with a consumer on its providers.

The decision is a pure function of the records, so it can be read, tested
as a table, and re-run after a generation conflict with fresh data.
"""

from __future__ import annotations

from dataclasses import dataclass

from rtframework.compute.values import GONE_VM_STATES, Instance, InstanceState, Migration

KEEP = "keep"
REMOVE = "remove"

# Kinds of audit findings the heal reports (and leaves for an operator).
UNKNOWN_CONSUMER = "unknown_consumer"
STALE_MIGRATION = "stale_migration"
MULTI_NODE = "multi_node"
UNOWNED = "unowned"


@dataclass(frozen=True)
class HealDecision:
    action: str  # KEEP or REMOVE
    reason: str
    finding: str | None = None  # kind of audit finding to report, if any


def decide(
    host: str,
    instance: Instance | InstanceState | None,
    migration: Migration | None,
    in_move: bool,
    nodes_held: int,
) -> HealDecision:
    """Decide about one consumer that holds something on ``host``'s providers.

    ``instance`` / ``migration``: the record whose uuid is the consumer's
    (None if there is none); ``in_move``: the instance has a task_state or
    an unfinished migration; ``nodes_held``: compute nodes (root providers)
    the consumer holds allocations on. A consumer holding nothing on this
    host's providers is never looked at.

    | consumer is                                         | action | finding          |
    |-----------------------------------------------------|--------|------------------|
    | the migration record of an unfinished move          | keep   |                  |
    | the migration record of a finished move             | keep   | stale_migration  |
    | neither an instance nor a migration                 | keep   | unknown_consumer |
    | an instance in a move                               | keep   |                  |
    | an instance owned by another host                   | keep   |                  |
    | an instance owned by no host (host unset)           | keep   | unowned          |
    | owned here, DELETED or SHELVED_OFFLOADED            | remove |                  |
    | owned here, other state, on more than one node      | keep   | multi_node       |
    | owned here, other state                             | keep   |                  |

    Only the last-but-two row deletes anything: a host never removes what
    it does not own, and never "heals" a move back onto one host.
    """
    if migration is not None:
        if migration.finished:
            return HealDecision(KEEP, f"migration {migration.status}; left to an operator",
                                STALE_MIGRATION)
        return HealDecision(KEEP, f"migration {migration.status}: a move holds it")
    if instance is None:
        return HealDecision(KEEP, "neither an instance nor a migration", UNKNOWN_CONSUMER)
    if in_move:
        return HealDecision(KEEP, f"instance in a move (task_state {instance.task_state})")
    if instance.host is None:
        return HealDecision(KEEP, f"instance {instance.vm_state} owned by no host", UNOWNED)
    if instance.host != host:
        return HealDecision(KEEP, f"instance owned by host {instance.host}")
    if instance.vm_state in GONE_VM_STATES:
        return HealDecision(REMOVE, f"instance {instance.vm_state} on its own host")
    if nodes_held > 1:
        return HealDecision(KEEP, f"instance {instance.vm_state} not moving holds allocations "
                            f"on {nodes_held} compute nodes", MULTI_NODE)
    return HealDecision(KEEP, f"instance {instance.vm_state} on its own host")
