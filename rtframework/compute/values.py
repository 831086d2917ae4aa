"""Value objects of the compute records and the states they may be in.

Everything here is a frozen dataclass returned by
:class:`rtframework.compute.store.ComputeStore`; to change a record, call a
store method, never mutate a value.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass, field

# -- instance vm_state ----------------------------------------------------
BUILDING = "BUILDING"
ACTIVE = "ACTIVE"
RESIZED = "RESIZED"
SHELVED_OFFLOADED = "SHELVED_OFFLOADED"
DELETED = "DELETED"
ERROR = "ERROR"
VM_STATES = (BUILDING, ACTIVE, RESIZED, SHELVED_OFFLOADED, DELETED, ERROR)

# vm_states whose allocations the owning host removes when it heals.
GONE_VM_STATES = frozenset({DELETED, SHELVED_OFFLOADED})

# -- migrations -------------------------------------------------------------
MIGRATION_TYPES = ("migration", "resize", "live-migration", "evacuation")
MIGRATION_STATUSES = (
    "pre-migrating", "migrating", "finished", "confirming",
    "confirmed", "reverting", "reverted", "error", "done", "failed", "accepted",
    "running", "cancelled",
)
# A migration in one of these no longer holds (or intends to hold) a double
# claim; every other status means the move is still in flight, including
# "finished" (a resize waiting for confirm or revert).
FINISHED_MIGRATION_STATUSES = frozenset(
    {"confirmed", "reverted", "error", "done", "failed", "cancelled"}
)
UNFINISHED_MIGRATION_STATUSES = frozenset(MIGRATION_STATUSES) - FINISHED_MIGRATION_STATUSES
CLAIM_STRATEGIES = ("doubled", "migration")


@dataclass(frozen=True)
class Flavor:
    """A name and what it claims: resource class -> amount."""

    name: str
    resources: Mapping[str, int] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"name": self.name, "resources": dict(self.resources)}

    @classmethod
    def from_json(cls, data: Mapping) -> Flavor:
        return cls(name=data["name"], resources={k: int(v) for k, v in data["resources"].items()})


@dataclass(frozen=True)
class Instance:
    uuid: str
    name: str
    project_id: str
    user_id: str
    flavor: Flavor
    host: str | None
    node: str | None
    vm_state: str
    task_state: str | None
    created_at: datetime.datetime
    updated_at: datetime.datetime


@dataclass(frozen=True)
class InstanceState:
    """What a host's heal decides on about an instance: its owner and
    states, read without the rest of its record."""

    uuid: str
    host: str | None
    vm_state: str
    task_state: str | None


@dataclass(frozen=True)
class Migration:
    uuid: str
    instance_uuid: str
    migration_type: str
    status: str
    source_host: str | None
    source_node: str | None
    dest_host: str | None
    dest_node: str | None
    old_flavor: Flavor
    new_flavor: Flavor
    claim_strategy: str
    created_at: datetime.datetime
    updated_at: datetime.datetime
    # provider uuid -> class -> amount: what the instance held when the
    # move began, and the chosen destination's allocation request (None
    # until chosen, or on a record written before they were kept).
    source_allocations: Mapping[str, Mapping[str, int]] | None = None
    dest_allocations: Mapping[str, Mapping[str, int]] | None = None

    @property
    def finished(self) -> bool:
        return self.status in FINISHED_MIGRATION_STATUSES


@dataclass(frozen=True)
class ComputeNode:
    """A node a host reports; ``uuid`` is its root resource provider uuid."""

    uuid: str
    host: str
    nodename: str
    driver: str
    created_at: datetime.datetime
    updated_at: datetime.datetime


@dataclass(frozen=True)
class Service:
    """A host agent's heartbeat."""

    host: str
    last_seen: datetime.datetime
    forced_down: bool
    created_at: datetime.datetime
    disabled: bool = False
    disabled_reason: str | None = None


@dataclass(frozen=True)
class HostRecords:
    """The records one periodic pass of a host reads, in one transaction
    with its heartbeat: the host's service, the instances recorded on it,
    the unfinished migrations (of every host: few in any cloud) and the
    host's compute nodes."""

    service: Service
    instances: Mapping[str, InstanceState]
    unfinished_migrations: tuple[Migration, ...]
    compute_nodes: tuple[ComputeNode, ...]

    def known_instances(self, host: str) -> set[str]:
        """Instances recorded on ``host`` (not DELETED) and those of its
        unfinished moves, to or from it."""
        live = {u for u, i in self.instances.items() if i.vm_state != DELETED}
        return live | {m.instance_uuid for m in self.unfinished_migrations
                       if host in (m.source_host, m.dest_host)}


@dataclass(frozen=True)
class AuditFinding:
    """Something a host noticed about a consumer and did not fix itself."""

    id: int
    consumer_uuid: str
    host: str
    kind: str
    detail: str
    created_at: datetime.datetime


@dataclass(frozen=True)
class AllocationChange:
    """What one consumer held on one provider before and after a write."""

    id: int
    consumer_uuid: str
    provider_uuid: str
    before: Mapping[str, int]
    after: Mapping[str, int]
    who: str  # a host name, 'audit', 'heal', or an operator
    why: str
    created_at: datetime.datetime
