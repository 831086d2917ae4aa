"""Value objects exchanged with a placement backend.

All are frozen dataclasses; mappings are plain dicts that callers must not
mutate. Amounts are ints; ``allocations`` maps provider uuid -> resource
class -> amount everywhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

MAX_INT = 2147483647

# The trait of a provider that shares its inventory with every tree in one
# of its aggregates (a storage pool).
SHARING_TRAIT = "MISC_SHARES_VIA_AGGREGATE"

# provider uuid -> resource class -> amount
Allocations = Mapping[str, Mapping[str, int]]


def format_resources(resources: Mapping[str, int]) -> str:
    """How messages and logs write an amount per class: ``DISK_GB=10, VCPU=2``."""
    return ", ".join(f"{rc}={amount}" for rc, amount in sorted(resources.items()))


def capacity_of(total: int, reserved: int, allocation_ratio: float) -> float:
    """What may be allocated of an inventory: (total - reserved) * ratio."""
    return (total - reserved) * allocation_ratio


def summed(held: Allocations) -> dict[str, int]:
    """Amounts per resource class over providers (or consumers), zeros left out."""
    total: dict[str, int] = {}
    for resources in held.values():
        for rc, n in resources.items():
            if n:
                total[rc] = total.get(rc, 0) + int(n)
    return total


@dataclass(frozen=True)
class Inventory:
    """One resource class on one provider, with Placement's defaults."""

    total: int
    reserved: int = 0
    min_unit: int = 1
    max_unit: int = MAX_INT
    step_size: int = 1
    allocation_ratio: float = 1.0

    @property
    def capacity(self) -> float:
        """What may be allocated: (total - reserved) * allocation_ratio."""
        return capacity_of(self.total, self.reserved, self.allocation_ratio)


@dataclass(frozen=True)
class ResourceProvider:
    uuid: str
    name: str
    generation: int
    parent_uuid: str | None = None
    root_uuid: str | None = None


@dataclass(frozen=True)
class ProviderInventories:
    """A provider's whole inventory and the generation it was read at."""

    generation: int
    inventories: Mapping[str, Inventory]


@dataclass(frozen=True)
class ProviderTraits:
    generation: int
    traits: frozenset[str]


@dataclass(frozen=True)
class ProviderAggregates:
    generation: int
    aggregates: frozenset[str]


@dataclass(frozen=True)
class ConsumerAllocations:
    """What one consumer holds. ``generation`` is None for an unknown
    consumer (or one whose allocations were all removed)."""

    consumer_uuid: str
    allocations: Allocations
    generation: int | None = None
    project_id: str | None = None
    user_id: str | None = None
    consumer_type: str | None = None

    def emptied(self, *, project_id: str | None = None,
                user_id: str | None = None) -> AllocationWrite:
        """The write that removes everything this consumer holds, at the
        generation it was read at (the one "empty write" of a held consumer).

        ``project_id``/``user_id`` stand in when the backend did not say.
        """
        return AllocationWrite(
            consumer_uuid=self.consumer_uuid, allocations={},
            project_id=self.project_id or project_id or "",
            user_id=self.user_id or user_id or "",
            consumer_generation=self.generation,
            consumer_type=self.consumer_type or "INSTANCE",
        )


@dataclass(frozen=True)
class AllocationWrite:
    """Replace all allocations of one consumer.

    ``consumer_generation`` is the generation the writer last read (None for a
    consumer it believes new); empty ``allocations`` removes everything the
    consumer holds.
    """

    consumer_uuid: str
    allocations: Allocations
    project_id: str
    user_id: str
    consumer_generation: int | None
    # None records no type, as Placement's API before 1.38 does (read back
    # as None; its usages count it as "unknown").
    consumer_type: str | None = "INSTANCE"


@dataclass(frozen=True)
class ProviderQuery:
    """Filters of list_providers; all given filters must match."""

    uuid: str | None = None
    name: str | None = None
    in_tree: str | None = None
    # Each entry is an any-of set of aggregate uuids; every entry must match.
    member_of: tuple[frozenset[str], ...] = ()
    required_traits: frozenset[str] = frozenset()
    forbidden_traits: frozenset[str] = frozenset()
    # The provider itself must have room for each amount.
    resources: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class RequestGroup:
    """One numbered (granular) request group: every class it asks for comes
    from ONE provider, which has the required traits, none of the forbidden
    ones, is itself in an aggregate of each ``member_of`` any-of set and in
    none of ``forbidden_aggregates`` (its own aggregates only, as Placement
    has it: its root's do not count here) and, with ``in_tree``, sits in
    that provider's tree. A group without resources (named in
    ``same_subtree``) allocates nothing: it names a provider by its
    required traits or ``member_of``, as Placement does, or none."""

    resources: Mapping[str, int] = field(default_factory=dict)
    required_traits: frozenset[str] = frozenset()
    forbidden_traits: frozenset[str] = frozenset()
    member_of: tuple[frozenset[str], ...] = ()
    in_tree: str | None = None
    # member_of=!agg / member_of=!in:a,b (Placement 1.32): in none of them.
    forbidden_aggregates: frozenset[str] = frozenset()


GROUP_POLICIES = ("none", "isolate")


@dataclass(frozen=True)
class CandidateQuery:
    """A GET /allocation_candidates request.

    The unnumbered group (``resources`` ... ``in_tree``): each class from one
    provider of one tree, or from a sharing provider (trait
    MISC_SHARES_VIA_AGGREGATE) in an aggregate with a provider of that tree.
    ``groups``: numbered groups by suffix (``resources1=`` is ``groups["1"]``).
    ``group_policy`` (needed with more than one numbered group): ``none``
    lets numbered groups share a provider, ``isolate`` puts each on its own.
    ``root_required``/``root_forbidden``: traits the candidate tree's root
    has / lacks. ``same_subtree``: sets of suffixes whose providers all sit
    under one of them. ``forbidden_aggregates`` (``member_of=!agg``,
    ``member_of=!in:a,b``): no provider serving the unnumbered group, nor
    the root of its tree, is in one of them.
    """

    resources: Mapping[str, int] = field(default_factory=dict)
    required_traits: frozenset[str] = frozenset()
    forbidden_traits: frozenset[str] = frozenset()
    member_of: tuple[frozenset[str], ...] = ()
    in_tree: str | None = None
    limit: int | None = None
    groups: Mapping[str, RequestGroup] = field(default_factory=dict)
    group_policy: str | None = None
    root_required: frozenset[str] = frozenset()
    root_forbidden: frozenset[str] = frozenset()
    same_subtree: tuple[frozenset[str], ...] = ()
    forbidden_aggregates: frozenset[str] = frozenset()

    @property
    def granular(self) -> bool:
        """Asks for more than one unnumbered group can express."""
        return bool(self.groups or self.root_required or self.root_forbidden
                    or self.same_subtree)


@dataclass(frozen=True)
class ResourceSummary:
    capacity: int
    used: int


@dataclass(frozen=True)
class ProviderSummary:
    uuid: str
    root_uuid: str
    parent_uuid: str | None
    resources: Mapping[str, ResourceSummary]
    traits: frozenset[str]


@dataclass(frozen=True)
class AllocationRequest:
    """What to write to claim one candidate; ``mappings`` says which
    providers served which group suffix (``""`` the unnumbered group)."""

    allocations: Allocations
    mappings: Mapping[str, tuple[str, ...]] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class AllocationCandidates:
    allocation_requests: tuple[AllocationRequest, ...]
    provider_summaries: Mapping[str, ProviderSummary]
