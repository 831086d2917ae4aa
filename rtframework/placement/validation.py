"""The rules a placement backend applies to a request before it writes.

Part of the backend contract: every backend (``sql``, ``http``, a
third-party one) calls these at its entry points so that the same bad
request gets the same typed error on every backend and every database
engine. They are pure functions without I/O. Lengths are checked here, in
Python, because SQLite does not enforce VARCHAR lengths while PostgreSQL
and MySQL refuse the row with their own error.

The identifiers follow OpenStack Placement's request schemas: consumer,
provider and aggregate uuids are UUIDs in any spelling
:func:`oslo_utils.uuidutils.is_uuid_like` accepts, normalized to the
lower-case dashed form (so one UUID is one provider however it was
written); project and user ids are 1 to 255 characters; a consumer type
is ``[A-Z0-9_]+``; a provider name 1 to 200 characters.

Longer than most modules on purpose: the contract's rules are written
once, in one place every backend reads.
"""

from __future__ import annotations

import dataclasses
import math
import re
import uuid as uuidlib
from collections.abc import Iterable

import os_resource_classes
import os_traits
from oslo_utils import uuidutils

from rtframework.placement import errors
from rtframework.placement import types as t

CUSTOM_PREFIX = "CUSTOM_"
MAX_NAME = 255
MAX_PROVIDER_NAME = 200
MAX_EXTERNAL_ID = 255
# Placement keeps allocation_ratio in a single-precision FLOAT column and
# refuses larger values.
MAX_RATIO = 3.40282e38
_CUSTOM_NAME = re.compile(r"^CUSTOM_[A-Z0-9_]+$")
_CONSUMER_TYPE = re.compile(r"^[A-Z0-9_]+$")

STANDARD_CLASSES: frozenset[str] = frozenset(os_resource_classes.STANDARDS)
STANDARD_TRAITS: frozenset[str] = frozenset(os_traits.get_traits())


# -- names ---------------------------------------------------------------
def is_custom_name(name: object) -> bool:
    """``CUSTOM_`` followed by upper-case letters, digits and underscores,
    at most 255 characters: the custom resource class and trait rule."""
    return isinstance(name, str) and len(name) <= MAX_NAME and bool(_CUSTOM_NAME.match(name))


def _check_name(name: str, what: str, standard: frozenset[str], standard_what: str,
                error: type[errors.InvalidRequest]) -> None:
    """A resource class or trait name is standard or CUSTOM_ followed by [A-Z0-9_]."""
    if name not in standard and not is_custom_name(name):
        raise error(f"invalid {what} {_short(name)}: neither a standard {standard_what} nor "
                    "CUSTOM_ followed by upper-case letters, digits and underscores")


def check_resource_class_name(name: str) -> None:
    _check_name(name, "resource class", STANDARD_CLASSES, "class", errors.InvalidResourceClass)


def check_custom_resource_class_name(name: str) -> None:
    """Only custom classes may be created or deleted."""
    check_resource_class_name(name)
    if name in STANDARD_CLASSES:
        raise errors.InvalidResourceClass(
            f"resource class {name} is a standard class and cannot be deleted"
        )


def check_trait_name(name: str) -> None:
    _check_name(name, "trait", STANDARD_TRAITS, "trait (os-traits)", errors.InvalidTrait)


def check_custom_trait_name(name: str) -> None:
    """Only custom traits may be deleted."""
    check_trait_name(name)
    if name in STANDARD_TRAITS:
        raise errors.InvalidTrait(f"trait {name} is a standard trait and cannot be deleted")


def check_provider_name(name: object) -> str:
    if not isinstance(name, str) or not 1 <= len(name) <= MAX_PROVIDER_NAME:
        raise errors.InvalidRequest(
            f"provider name must be 1 to {MAX_PROVIDER_NAME} characters, got {_short(name)}")
    return name


def _short(value: object) -> str:
    """repr of a value, cut so that a 10 KB string stays a one-line message."""
    text = repr(value)
    if len(text) > 80:
        length = f", {len(value)} characters" if isinstance(value, str) else ""
        return f"{text[:60]}...{text[-10:]} ({type(value).__name__}{length})"
    return text


# -- identifiers ---------------------------------------------------------
_CANONICAL_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\Z")


def normalize_uuid(value: object, what: str) -> str:
    """The lower-case dashed form of a UUID, or InvalidRequest naming ``what``."""
    if isinstance(value, str) and _CANONICAL_UUID.match(value):
        # Already that form (what every read hands back): no parsing.
        return value
    if not isinstance(value, str) or not uuidutils.is_uuid_like(value):
        raise errors.InvalidRequest(f"{what} {_short(value)} is not a UUID")
    return str(uuidlib.UUID(value))


def normalize_optional_uuid(value: object, what: str) -> str | None:
    return None if value is None else normalize_uuid(value, what)


def check_external_id(value: object, what: str) -> str:
    """A project or user id: 1 to 255 characters, as Placement takes them."""
    if not isinstance(value, str) or not 1 <= len(value) <= MAX_EXTERNAL_ID:
        raise errors.InvalidRequest(
            f"{what} must be 1 to {MAX_EXTERNAL_ID} characters, got {_short(value)}")
    return value


def check_consumer_type(value: object) -> str:
    if (not isinstance(value, str) or len(value) > MAX_NAME
            or not _CONSUMER_TYPE.match(value)):
        raise errors.InvalidRequest(
            f"consumer type must be upper-case letters, digits and underscores, "
            f"got {_short(value)}")
    return value


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_generation(value: object, what: str, *, optional: bool = False) -> None:
    if value is None and optional:
        return
    if not _is_int(value) or value < 0:
        raise errors.InvalidRequest(f"{what} must be an integer >= 0, got {_short(value)}")


# -- inventories and amounts ------------------------------------------------
def check_inventory(provider: str, resource_class: str, inv: t.Inventory) -> None:
    """The constraints on one inventory record.

    It does not require max_unit <= total (a max_unit of 2**31-1 is the
    default) and it allows reserved == total (nothing allocatable). Stricter
    than Placement where Placement's answer would leave a class that can
    never be allocated: a ratio must be finite and > 0, and min_unit <=
    max_unit.
    """
    where = f"inventory of {resource_class} on provider {provider}"
    if not isinstance(inv, t.Inventory):
        raise errors.InvalidInventory(f"{where}: not an Inventory: {_short(inv)}")
    # Each integer field and its least value.
    for field, least in (("total", 1), ("reserved", 0), ("min_unit", 1), ("max_unit", 1),
                         ("step_size", 1)):
        value = getattr(inv, field)
        if not _is_int(value):
            raise errors.InvalidInventory(f"{where}: {field} must be an integer, got {value!r}")
        if value > t.MAX_INT:
            raise errors.InvalidInventory(f"{where}: {field} {value} > {t.MAX_INT}")
        if value < least:
            raise errors.InvalidInventory(f"{where}: {field} {value} < {least}")
    if inv.reserved > inv.total:
        raise errors.InvalidInventory(f"{where}: reserved {inv.reserved} > total {inv.total}")
    if inv.min_unit > inv.max_unit:
        raise errors.InvalidInventory(
            f"{where}: min_unit {inv.min_unit} > max_unit {inv.max_unit}")
    ratio = inv.allocation_ratio
    if (isinstance(ratio, bool) or not isinstance(ratio, int | float)
            or not math.isfinite(ratio) or not 0 < ratio <= MAX_RATIO):
        raise errors.InvalidInventory(
            f"{where}: allocation_ratio {ratio!r} must be a finite number > 0 "
            f"and <= {MAX_RATIO:g}")


def check_inventories(provider: str, inventories: object) -> dict[str, t.Inventory]:
    if not hasattr(inventories, "items"):
        raise errors.InvalidInventory(
            f"inventories of provider {provider} must map class -> Inventory, "
            f"got {_short(inventories)}")
    found = dict(inventories.items())
    for rc, inv in sorted(found.items(), key=lambda item: str(item[0])):
        check_resource_class_name(rc)
        check_inventory(provider, rc, inv)
    return found


def fits(amount: int, capacity: float, used: int, min_unit: int, max_unit: int,
         step_size: int) -> bool:
    """Room for ``amount`` more within capacity (total minus reserved, times
    the ratio) and the unit constraints of an inventory.

    The one "fits" rule: the sql backend's candidate search applies it in
    Python (``candidates``, ``granular``) and, in SQL, as
    :func:`rtframework.placement.sql.queries.fits_clauses`.
    """
    return (min_unit <= amount <= max_unit and amount % step_size == 0
            and used + amount <= capacity)


def check_amount(provider: str, resource_class: str, amount: int, inv: t.Inventory | None) -> None:
    """One consumer's amount of one class on one provider."""
    if not _is_int(amount) or amount < 1 or amount > t.MAX_INT:
        raise errors.InvalidAllocation(
            f"allocation of {resource_class} on provider {provider}: amount must be an "
            f"integer from 1 to {t.MAX_INT}, got {_short(amount)}"
        )
    if inv is None:
        raise errors.InvalidAllocation(
            f"provider {provider} has no inventory of {resource_class}"
        )
    if amount < inv.min_unit:
        raise errors.InvalidAllocation(
            f"allocation of {amount} {resource_class} on provider {provider} "
            f"is below min_unit {inv.min_unit}"
        )
    if amount > inv.max_unit:
        raise errors.InvalidAllocation(
            f"allocation of {amount} {resource_class} on provider {provider} "
            f"is above max_unit {inv.max_unit}"
        )
    if amount % inv.step_size:
        raise errors.InvalidAllocation(
            f"allocation of {amount} {resource_class} on provider {provider} "
            f"is not a multiple of step_size {inv.step_size}"
        )


def check_capacity(
    provider: str, resource_class: str, *, used_before: int, used_others: int, requested: int,
    inv: t.Inventory,
) -> None:
    """Room for ``requested`` next to what other consumers hold.

    ``used_before`` is the usage before the write (including what the
    writing consumers held). A provider already over capacity (its inventory
    shrank) is tolerated as long as the write does not raise its usage.
    """
    cap = inv.capacity
    after = used_others + requested
    if after > cap and after > used_before:
        raise errors.CapacityExceeded(
            f"capacity exceeded on provider {provider} for {resource_class}: "
            f"used {used_others} + requested {requested} > capacity {cap}",
            provider=provider, resource_class=resource_class,
        )


# -- whole requests ------------------------------------------------------
def _check_amounts_shape(resources: object, where: str,
                         amount_error: type[errors.PlacementError] = errors.InvalidRequest,
                         ) -> dict[str, int]:
    """class -> amount, each amount 1 to MAX_INT (else ``amount_error``)."""
    if not hasattr(resources, "items"):
        raise errors.InvalidRequest(f"{where}: resources must map class -> amount, "
                                    f"got {_short(resources)}")
    found = dict(resources.items())
    for rc, amount in found.items():
        check_resource_class_name(rc)
        if not _is_int(amount) or not 1 <= amount <= t.MAX_INT:
            raise amount_error(
                f"{where}: amount of {rc} must be an integer from 1 to {t.MAX_INT}, "
                f"got {_short(amount)}")
    return found


def allocation_writes(writes: Iterable[t.AllocationWrite]) -> list[t.AllocationWrite]:
    """The writes with every uuid normalized, or InvalidRequest/InvalidAllocation.

    Amounts are checked against inventories later, by the backend; here
    only what needs no data: ids, types, amount ranges, a consumer named
    twice.
    """
    checked: list[t.AllocationWrite] = []
    for w in writes:
        if not isinstance(w, t.AllocationWrite):
            raise errors.InvalidRequest(f"not an AllocationWrite: {_short(w)}")
        consumer = normalize_uuid(w.consumer_uuid, "consumer uuid")
        check_external_id(w.project_id, f"project id of consumer {consumer}")
        check_external_id(w.user_id, f"user id of consumer {consumer}")
        if w.consumer_type is not None:  # None: no type recorded
            check_consumer_type(w.consumer_type)
        check_generation(w.consumer_generation, f"consumer generation of {consumer}",
                         optional=True)
        if not hasattr(w.allocations, "items"):
            raise errors.InvalidRequest(
                f"allocations of consumer {consumer} must map provider -> class -> amount, "
                f"got {_short(w.allocations)}")
        allocations: dict[str, dict[str, int]] = {}
        for provider, resources in w.allocations.items():
            rp = normalize_uuid(provider, f"provider uuid (allocation of consumer {consumer})")
            if rp in allocations:
                raise errors.InvalidRequest(
                    f"provider {rp} is named twice in the allocations of consumer {consumer}")
            resources = _check_amounts_shape(
                resources, f"allocation of consumer {consumer} on provider {rp}",
                amount_error=errors.InvalidAllocation)
            if resources:
                allocations[rp] = resources
        checked.append(dataclasses.replace(w, consumer_uuid=consumer, allocations=allocations))
    names = [w.consumer_uuid for w in checked]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise errors.InvalidRequest(f"a consumer is named twice in one write: {', '.join(twice)}")
    return checked


def _uuid_sets(member_of: object, what: str) -> tuple[frozenset[str], ...]:
    if isinstance(member_of, str | bytes) or not isinstance(member_of, Iterable):
        raise errors.InvalidRequest(f"{what} must be a sequence of sets of aggregate uuids")
    return tuple(frozenset(normalize_uuid(a, "aggregate uuid") for a in any_of)
                 for any_of in member_of)


def _uuid_set(values: object, what: str) -> frozenset[str]:
    if isinstance(values, str | bytes) or not isinstance(values, Iterable):
        raise errors.InvalidRequest(f"{what} must be a set of aggregate uuids, got "
                                    f"{_short(values)}")
    return frozenset(normalize_uuid(a, f"{what} uuid") for a in values)


def _traits(names: object, what: str) -> frozenset[str]:
    if isinstance(names, str | bytes) or not isinstance(names, Iterable):
        raise errors.InvalidRequest(f"{what} must be a set of trait names, got {_short(names)}")
    found = frozenset(names)
    for name in sorted(found, key=str):
        check_trait_name(name)
    return found


def provider_query(query: t.ProviderQuery | None) -> t.ProviderQuery:
    """A ProviderQuery with valid names and normalized uuids."""
    query = query or t.ProviderQuery()
    return dataclasses.replace(
        query,
        uuid=normalize_optional_uuid(query.uuid, "provider uuid"),
        in_tree=normalize_optional_uuid(query.in_tree, "in_tree provider uuid"),
        name=None if query.name is None else check_provider_name(query.name),
        member_of=_uuid_sets(query.member_of, "member_of"),
        required_traits=_traits(query.required_traits, "required traits"),
        forbidden_traits=_traits(query.forbidden_traits, "forbidden traits"),
        resources=_check_amounts_shape(query.resources, "provider query"),
    )


_SUFFIX = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def candidate_query(query: t.CandidateQuery) -> t.CandidateQuery:
    """A CandidateQuery that names resources, with valid names, amounts and
    uuids, and request groups Placement would take."""
    if not isinstance(query, t.CandidateQuery):
        raise errors.InvalidRequest(f"not a CandidateQuery: {_short(query)}")
    resources = _check_amounts_shape(query.resources, "allocation candidate request")
    if query.limit is not None and (not _is_int(query.limit) or query.limit < 1):
        raise errors.InvalidRequest(f"limit must be an integer >= 1, got {_short(query.limit)}")
    if not hasattr(query.groups, "items"):
        raise errors.InvalidRequest(f"groups must map suffix -> RequestGroup, got "
                                    f"{_short(query.groups)}")
    groups = {}
    for suffix, group in query.groups.items():
        if not isinstance(suffix, str) or not _SUFFIX.match(suffix):
            raise errors.InvalidRequest(
                f"request group suffix must be 1 to 64 letters, digits, '_' or '-', got "
                f"{_short(suffix)}")
        if not isinstance(group, t.RequestGroup):
            raise errors.InvalidRequest(f"request group {suffix}: not a RequestGroup: "
                                        f"{_short(group)}")
        where = f"request group {suffix}"
        checked = dataclasses.replace(
            group,
            resources=_check_amounts_shape(group.resources, where),
            in_tree=normalize_optional_uuid(group.in_tree, f"{where} in_tree provider uuid"),
            member_of=_uuid_sets(group.member_of, f"{where} member_of"),
            required_traits=_traits(group.required_traits, f"{where} required traits"),
            forbidden_traits=_traits(group.forbidden_traits, f"{where} forbidden traits"),
            forbidden_aggregates=_uuid_set(group.forbidden_aggregates,
                                           f"{where} forbidden aggregate"),
        )
        # A group without resources is accepted when it narrows anything
        # (Placement 1.36+, in same_subtree; see below); which provider it
        # names is the search's business (granular: by required traits or
        # member_of only, as Placement does).
        if not (checked.resources or checked.required_traits or checked.forbidden_traits
                or checked.member_of or checked.forbidden_aggregates or checked.in_tree):
            raise errors.InvalidRequest(
                f"{where} asks for nothing: no resources, traits, aggregates or tree")
        groups[suffix] = checked
    if not resources and not any(g.resources for g in groups.values()):
        raise errors.InvalidRequest("an allocation candidate request needs resources")
    forbidden_aggregates = _uuid_set(query.forbidden_aggregates, "forbidden aggregate")
    if not resources and (query.in_tree or query.member_of or query.required_traits
                          or query.forbidden_traits or forbidden_aggregates):
        raise errors.InvalidRequest(
            "the unnumbered group names in_tree, member_of or traits but no resources; "
            "name them on the numbered groups instead")
    resourceless = sorted(s for s, g in groups.items() if not g.resources
                          and not any(s in same for same in query.same_subtree))
    if resourceless:
        raise errors.InvalidRequest(
            f"request group(s) {', '.join(resourceless)} ask for no resources: such a group "
            "must be named in same_subtree")
    if len(groups) > 1 and query.group_policy is None:
        raise errors.InvalidRequest(
            "group_policy (none or isolate) is required with more than one numbered group")
    if query.group_policy is not None and query.group_policy not in t.GROUP_POLICIES:
        raise errors.InvalidRequest(
            f"group_policy must be none or isolate, got {_short(query.group_policy)}")
    same_subtree = tuple(frozenset(s) for s in query.same_subtree)
    for suffixes in same_subtree:
        unknown = sorted(s for s in suffixes if s not in groups)
        if unknown:
            raise errors.InvalidRequest(
                f"same_subtree names request group(s) {', '.join(map(str, unknown))} "
                "the request does not have")
    root_required = _traits(query.root_required, "root_required traits")
    root_forbidden = _traits(query.root_forbidden, "root_required forbidden traits")
    if root_required & root_forbidden:
        both = ", ".join(sorted(root_required & root_forbidden))
        raise errors.InvalidRequest(f"root_required both requires and forbids {both}")
    return dataclasses.replace(
        query,
        resources=resources,
        in_tree=normalize_optional_uuid(query.in_tree, "in_tree provider uuid"),
        member_of=_uuid_sets(query.member_of, "member_of"),
        required_traits=_traits(query.required_traits, "required traits"),
        forbidden_traits=_traits(query.forbidden_traits, "forbidden traits"),
        groups=groups, same_subtree=same_subtree,
        root_required=root_required, root_forbidden=root_forbidden,
        forbidden_aggregates=forbidden_aggregates,
    )


def aggregates(values: object) -> frozenset[str]:
    if isinstance(values, str | bytes) or not isinstance(values, Iterable):
        raise errors.InvalidRequest(f"aggregates must be a set of uuids, got {_short(values)}")
    return frozenset(normalize_uuid(a, "aggregate uuid") for a in values)


def trait_set(values: object) -> frozenset[str]:
    return _traits(values, "traits")
