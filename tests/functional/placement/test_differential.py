"""Differential: the sql backend, on each engine, answers as Placement does.

A hypothesis state machine sends one random sequence of operations to an
SQLBackend and, as REST requests through the independent client of
``placement_rest``, to a real OpenStack Placement (served for this module
alone, on SQLite). Every backend operation is covered: providers (trees,
renames, re-parenting, deletion), whole and single-class inventories with
every field varied, traits, aggregates, resource classes, one- and
two-consumer allocation writes with consumer generations, deletion of a
consumer's allocations, provider listings and allocation candidates with
required and forbidden traits, member_of (forbidden aggregates too), in_tree
and limit, numbered request groups with group_policy, root_required and
same_subtree, and sharing providers (MISC_SHARES_VIA_AGGREGATE); candidates' mappings are
compared too.

After each operation:

* the outcome must agree: a value equal to Placement's answer, or the
  rtframework error class that Placement's status and error code stand for
  (``expected_error``, written here, independent of the http backend);
* both sides must hold the same providers (names, trees, generations),
  inventories, traits, aggregates, usages, allocations of every provider
  and consumer (with consumer generations) and project usages. The sql side
  is read in full every step; Placement's answers are re-read for what the
  step touched or whose generation moved, and in full every
  ``FULL_READ_EVERY`` steps and at the end of each example.

Candidates are compared as sets: Placement builds them in a Python set, so
their order is not defined, and with a ``limit`` it returns an arbitrary
``limit`` of them; the test checks how many came back and that each is one
of the unlimited answer's.

The differences rtframework keeps on purpose, and those it knows of, are
left out, each where its comment says, and nothing else.

Budget: ``RTF_TEST_DIFFERENTIAL="sqlite:200x30,postgresql:20x30"`` runs that
many examples of at most that many steps per engine (``tox -e
differential``); without it, a small run on the engine RTF_TEST_DB selects.
Examples are derandomized, so a run is repeatable;
``RTF_TEST_DIFFERENTIAL_SHRINK=0`` reports a failure as found, unshrunk.
"""

from __future__ import annotations

import contextlib
import os
import uuid as uuidlib

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from rtframework.placement import errors
from rtframework.placement import types as t
from tests.fixtures import databases
from tests.functional.placement import placement_rest as rest
from tests.functional.placement.placement_rest import NO_CONSUMER, Refused

pytest.importorskip("placement", reason="needs openstack-placement (tox -e differential)")

pytestmark = [pytest.mark.placement, pytest.mark.differential]

MAX_PROVIDERS = 5
CONSUMERS = 3
USERS = ("user-a", "user-b")
STANDARD_CLASSES = ("VCPU", "MEMORY_MB", "DISK_GB")
# A provider with MISC_SHARES_VIA_AGGREGATE shares its inventory with the
# providers of its aggregates.
STANDARD_TRAITS = ("HW_CPU_X86_AVX2", "HW_CPU_X86_SSE", "COMPUTE_NODE",
                   "MISC_SHARES_VIA_AGGREGATE")
# Positions of the example's own traits after the standard ones: the first
# exists from the start, the second only once a rule creates it.
CUSTOM_T, CUSTOM_U = len(STANDARD_TRAITS), len(STANDARD_TRAITS) + 1
FULL_READ_EVERY = 10
SMALL_BUDGET = (10, 15)


def budgets() -> dict[str, tuple[int, int]]:
    """engine -> (examples, steps) from RTF_TEST_DIFFERENTIAL."""
    spec = os.environ.get("RTF_TEST_DIFFERENTIAL", "").strip()
    if not spec:
        return {databases.selected_engine(): SMALL_BUDGET}
    found = {}
    for part in spec.split(","):
        engine, _, size = part.strip().partition(":")
        examples, _, steps = size.partition("x")
        if engine not in databases.ENGINES or not examples.isdigit() or not steps.isdigit():
            raise ValueError(f"RTF_TEST_DIFFERENTIAL={spec!r}: expected "
                             f"ENGINE:EXAMPLESxSTEPS[,...] with ENGINE one of "
                             f"{', '.join(databases.ENGINES)}; got {part!r}")
        found[engine] = (int(examples), int(steps))
    return found


# -- what a Placement refusal means in rtframework's error classes ----------

def expected_error(kind: str, refused: Refused) -> type[errors.PlacementError]:
    """The error class the contract names for Placement's answer.

    ``kind`` is what the request was about: provider, inventory, traits,
    aggregates, allocations, resource_class, trait or query. Placement gives
    a stable code only for some conflicts; the rest are told apart by the
    request and the status, and where Placement gives several answers one
    status, by the words of its detail.
    """
    status, code, detail = refused.status, refused.code, refused.detail.lower()
    if status == 404:
        if kind == "resource_class":
            return errors.ResourceClassNotFound
        if "no inventory of class" in detail:
            return errors.NotFound
        return errors.ProviderNotFound
    if status == 409:
        by_code = {
            "placement.inventory.inuse": errors.InventoryInUse,
            "placement.resource_provider.inuse": errors.ProviderInUse,
            "placement.resource_provider.cannot_delete_parent": errors.CannotDeleteParent,
        }
        if code in by_code:
            return by_code[code]
        if code == "placement.concurrent_update":
            if "consumer generation" in detail:
                return errors.ConsumerGenerationConflict
            return errors.ProviderGenerationConflict
        if code == "placement.duplicate_name":
            return errors.DuplicateUUID if "uuid:" in detail else errors.DuplicateName
        if kind == "allocations":
            if "exceed the capacity" in detail:
                return errors.CapacityExceeded
            return errors.InvalidAllocation
        if kind == "resource_class":
            return errors.ResourceClassInUse
        return errors.Conflict
    if status == 400:
        if "no such resource class" in detail or "unknown resource class" in detail:
            return errors.ResourceClassNotFound
        if "no such trait" in detail:
            return errors.TraitNotFound
        if kind == "resource_class":
            return errors.InvalidResourceClass
        if kind == "trait":
            return errors.InvalidTrait
        if kind == "inventory":
            return errors.InvalidInventory
        if kind in ("provider", "allocations") and "does not exist" in detail:
            return errors.ProviderNotFound
        return errors.InvalidRequest
    raise AssertionError(f"Placement answered HTTP {status}: {refused}")


# -- the sql side, read into the client's plain shapes -----------------------

def inventory_tuple(inv: t.Inventory) -> rest.Inventory:
    return (inv.total, inv.reserved, inv.min_unit, inv.max_unit, inv.step_size,
            float(inv.allocation_ratio))


def provider_tuple(rp: t.ResourceProvider) -> rest.Provider:
    return (rp.name, rp.generation, rp.parent_uuid, rp.root_uuid)


def consumer_tuple(held: t.ConsumerAllocations) -> rest.Consumer:
    if not held.allocations:
        return NO_CONSUMER
    return ({rp: dict(res) for rp, res in held.allocations.items()}, held.generation,
            held.project_id, held.user_id, held.consumer_type)


def candidates_of(found: t.AllocationCandidates):
    return ([({rp: dict(res) for rp, res in req.allocations.items()},
              {suffix: tuple(rps) for suffix, rps in req.mappings.items()})
             for req in found.allocation_requests],
            {rp: (s.root_uuid, s.parent_uuid,
                  {rc: (r.capacity, r.used) for rc, r in s.resources.items()}, s.traits)
             for rp, s in found.provider_summaries.items()})


def canonical(request) -> tuple:
    """One allocation request, and which providers served which group,
    in a form that compares as a set member."""
    allocations, mappings = request
    return (tuple(sorted((rp, rc, n) for rp, res in allocations.items() for rc, n in res.items())),
            tuple(sorted((suffix, tuple(sorted(rps))) for suffix, rps in mappings.items())))


def stale(generation: int, kind: str) -> int:
    """The generation a writer names: the current one, or a wrong one that
    is still a valid generation (>= 0)."""
    if kind != "stale":
        return generation
    return generation - 1 if generation > 0 else generation + 1


# -- strategies ----------------------------------------------------------------

index = st.integers(0, MAX_PROVIDERS - 1)
generation_kind = st.sampled_from(["right", "right", "right", "stale"])
consumer_generation_kind = st.sampled_from(["right", "right", "right", "stale", "none"])
inventory = st.tuples(
    st.integers(1, 8),                                   # total
    st.integers(0, 3),                                   # reserved (may pass total)
    st.sampled_from([1, 1, 1, 2, 3]),                    # min_unit
    st.sampled_from([t.MAX_INT, t.MAX_INT, 2, 4, 6]),    # max_unit
    st.sampled_from([1, 1, 1, 2, 3]),                    # step_size
    st.sampled_from([1.0, 1.0, 1.5, 2.0]),               # allocation_ratio
)
# Index into the example's classes: 0-2 standard, 3-4 its custom ones.
class_index = st.integers(0, 4)
inventories = st.dictionaries(class_index, inventory, max_size=3)
amounts = st.dictionaries(class_index, st.integers(1, 6), min_size=1, max_size=2)
MISSING = -1  # a provider that does not exist
picks = st.lists(st.tuples(index | index | st.just(MISSING), amounts), max_size=2)
trait_index = st.integers(0, CUSTOM_U)
aggregate_sets = st.frozensets(st.integers(0, 2), max_size=2)
# Each entry an any-of set of aggregates, all entries required.
member_of_sets = st.lists(st.frozensets(st.integers(0, 2), min_size=1, max_size=2), max_size=2)


class Differential(RuleBasedStateMachine):
    """One example: fresh names and uuids on a database both sides share
    across examples, cleaned up at the end."""

    sql = None          # SQLBackend, set per engine
    placement = None    # PlacementREST

    def __init__(self):
        super().__init__()
        tag = uuidlib.uuid4().hex[:8].upper()
        self.classes = [*STANDARD_CLASSES, f"CUSTOM_D{tag}_A", f"CUSTOM_D{tag}_B"]
        self.traits = [*STANDARD_TRAITS, f"CUSTOM_D{tag}_T", f"CUSTOM_D{tag}_U"]
        self.aggregates = [str(uuidlib.uuid4()) for _ in range(3)]
        self.consumers = [str(uuidlib.uuid4()) for _ in range(CONSUMERS)]
        self.project = f"diff-{tag.lower()}"
        self.providers: list[str] = []          # on both sides, creation order
        self.every_uuid: set[str] = set()       # every provider uuid this example named
        self.offset: dict[str, int] = {}        # sql generation - Placement generation
        self.steps = 0
        # Placement's answers as last read: uuid -> Provider; uuid -> details.
        self.seen_providers: dict[str, rest.Provider] = {}
        self.seen_details: dict[str, dict] = {}
        self.seen_consumers: dict[str, rest.Consumer] = {}
        self.seen_project: dict = {}
        self.custom_classes: set[str] = set()  # this example's that exist
        self.trait_made = False
        # Consumers Placement left as empty records at generation 0.
        self.leaked: set[str] = set()

    @initialize()
    def first_custom_names(self):
        # One custom class and trait exist from the start; the second of each
        # only once a rule creates it.
        self.both("resource_class", f"ensure_resource_class({self.classes[3]})",
                  lambda: self.sql.ensure_resource_class(self.classes[3]),
                  lambda: self.placement.put_resource_class(self.classes[3]))
        self.both("trait", f"ensure_trait({self.traits[CUSTOM_T]})",
                  lambda: self.sql.ensure_trait(self.traits[CUSTOM_T]),
                  lambda: self.placement.put_trait(self.traits[CUSTOM_T]))
        self.custom_classes.add(self.classes[3])
        self.compare_names()

    # -- one operation on both sides --------------------------------------------
    def both(self, kind, what, on_sql, on_placement, *, same=lambda s, p: s == p):
        """Run one operation on each side; same value or the expected error.

        Returns (sql value, sql error).
        """
        try:
            sql_value, sql_error = on_sql(), None
        except errors.PlacementError as exc:
            sql_value, sql_error = None, exc
        try:
            placement_value, refused = on_placement(), None
        except Refused as exc:
            placement_value, refused = None, exc
        if refused is not None or sql_error is not None:
            want = expected_error(kind, refused) if refused is not None else None
            assert type(sql_error) is want, (
                f"{what}: sql -> {sql_error!r}; Placement -> {refused or placement_value!r} "
                f"(expected {want.__name__ if want else 'success'})")
        else:
            assert same(sql_value, placement_value), (
                f"{what}: sql -> {sql_value!r}; Placement -> {placement_value!r}")
        return sql_value, sql_error

    def sql_only(self, what, on_sql, want: type[errors.PlacementError]) -> None:
        """A known difference: only the sql side is asked, and must refuse."""
        with pytest.raises(want) as caught:
            on_sql()
        assert type(caught.value) is want, f"{what}: sql -> {caught.value!r}, expected {want}"

    def sql_generation(self, rp: str, kind: str) -> int:
        return stale(self.sql.get_provider(rp).generation, kind)

    def placement_generation(self, rp: str, kind: str) -> int:
        return stale(self.seen_providers[rp][1], kind)

    def generations_match(self, rp: str):
        """Compare a returned sql generation with Placement's."""
        return lambda s, p: s - self.offset.get(rp, 0) == p

    def provider(self, i: int) -> str:
        return self.providers[i % len(self.providers)]

    def new_uuid(self) -> str:
        found = str(uuidlib.uuid4())
        self.every_uuid.add(found)
        return found

    # -- providers -----------------------------------------------------------
    @precondition(lambda self: len(self.providers) < MAX_PROVIDERS)
    @rule(parent=st.none() | index | st.just("missing"),
          name=st.sampled_from(["fresh", "fresh", "fresh", "taken"]),
          reuse_uuid=st.sampled_from([False, False, False, False, True]))
    def create_provider(self, parent, name, reuse_uuid):
        rp = self.provider(0) if reuse_uuid and self.providers else self.new_uuid()
        if parent == "missing":
            parent_uuid = self.new_uuid()
        elif parent is not None and self.providers:
            parent_uuid = self.provider(parent)
        else:
            parent_uuid = None
        rp_name = (self.seen_providers[self.provider(1)][0]
                   if name == "taken" and self.providers else f"diff-{rp}")
        _, error = self.both(
            "provider", f"create_provider({rp_name!r}, {rp}, parent={parent_uuid})",
            lambda: provider_tuple(self.sql.create_provider(rp_name, uuid=rp,
                                                            parent_uuid=parent_uuid)),
            lambda: self.placement.create_provider(rp_name, rp, parent_uuid),
        )
        if error is None:
            self.providers.append(rp)
            self.refresh()

    @precondition(lambda self: self.providers)
    @rule(i=index, name=st.sampled_from(["same", "new", "taken"]),
          parent=st.none() | index)
    def update_provider(self, i, name, parent):
        rp = self.provider(i)
        current = self.seen_providers[rp][0]
        new_name = {"same": current, "new": f"renamed-{uuidlib.uuid4().hex[:12]}",
                    "taken": self.seen_providers[self.provider(i + 1)][0]}[name]
        parent_uuid = None if parent is None else self.provider(parent)
        _, error = self.both(
            "provider", f"update_provider({rp}, {new_name!r}, parent={parent_uuid})",
            lambda: provider_tuple(self.sql.update_provider(rp, name=new_name,
                                                            parent_uuid=parent_uuid)),
            lambda: self.placement.update_provider(rp, new_name, parent_uuid),
            same=lambda s, p: (s[0], s[1] - self.offset.get(rp, 0), *s[2:]) == p,
        )
        if error is None:
            self.refresh()

    @precondition(lambda self: self.providers)
    @rule(i=index)
    def delete_provider(self, i):
        rp = self.provider(i)
        _, error = self.both("provider", f"delete_provider({rp})",
                             lambda: self.sql.delete_provider(rp),
                             lambda: self.placement.delete_provider(rp))
        if error is None:
            self.providers.remove(rp)
            self.refresh()

    @precondition(lambda self: len(self.providers) <= MAX_PROVIDERS - 3)
    @rule(shape=st.sampled_from(["root and child apart", "pools linked by a tree"]))
    def known_shape(self, shape):
        """Shapes random rules rarely reach: a root and its child in
        different aggregates (member_of must not mix their aggregates), and
        two pools in different aggregates linked only by a tree that serves
        nothing (sharing providers alone make a candidate)."""
        def made() -> int:
            """The position of the provider just created (-1: refused)."""
            before = len(self.providers)
            self.create_provider(None, "fresh", False)
            return len(self.providers) - 1 if len(self.providers) > before else -1

        vcpu = (8, 0, 1, t.MAX_INT, 1, 1.0)
        if shape == "root and child apart":
            root = made()
            if root < 0:
                return
            before = len(self.providers)
            self.create_provider(root, "fresh", False)
            if len(self.providers) == before:
                return
            child = len(self.providers) - 1
            self.set_inventories(child, {0: vcpu}, "right")
            self.set_inventories(root, {1: (4096, 0, 1, t.MAX_INT, 1, 1.0)}, "right")
            self.set_aggregates(root, frozenset({0}), "right")
            self.set_aggregates(child, frozenset({1}), "right")
            return
        tree, disk, custom = made(), made(), made()
        if min(tree, disk, custom) < 0:
            return
        shares = frozenset({STANDARD_TRAITS.index("MISC_SHARES_VIA_AGGREGATE")})
        self.set_aggregates(tree, frozenset({0, 1}), "right")
        for pool, c, agg in ((disk, 2, 0), (custom, 3, 1)):
            self.set_inventories(pool, {c: vcpu}, "right")
            self.set_traits(pool, shares, "right")
            self.set_aggregates(pool, frozenset({agg}), "right")

    # -- inventories ------------------------------------------------------------
    def invalid_by_contract(self, inv: rest.Inventory) -> bool:
        """Known difference: the contract refuses min_unit > max_unit and an
        allocation ratio <= 0; Placement accepts both."""
        return inv[2] > inv[3] or inv[5] <= 0

    def stale_and_reserved_over_total(self, kind, invs) -> bool:
        """Known difference: Placement checks the generation before
        reserved <= total; sql validates the whole request first."""
        return kind == "stale" and any(inv[1] > inv[0] for inv in invs)

    @precondition(lambda self: self.providers)
    @rule(i=index, invs=inventories, kind=generation_kind)
    def set_inventories(self, i, invs, kind):
        rp = self.provider(i)
        wanted = {self.classes[c]: inv for c, inv in invs.items()}
        as_sql = {rc: t.Inventory(*inv) for rc, inv in wanted.items()}
        sql_gen = self.sql_generation(rp, kind)
        what = f"set_inventories({rp}, gen={kind}, {wanted})"
        if any(self.invalid_by_contract(inv) for inv in wanted.values()):
            return self.sql_only(what, lambda: self.sql.set_inventories(rp, sql_gen, as_sql),
                                 errors.InvalidInventory)
        if self.stale_and_reserved_over_total(kind, wanted.values()):
            return self.sql_only(what, lambda: self.sql.set_inventories(rp, sql_gen, as_sql),
                                 errors.InvalidInventory)
        _, error = self.both("inventory", what,
                             lambda: self.sql.set_inventories(rp, sql_gen, as_sql),
                             lambda: self.placement.put_inventories(
                                 rp, self.placement_generation(rp, kind), wanted),
                             same=self.generations_match(rp))
        if error is None:
            self.refresh({rp: INVENTORY})

    @precondition(lambda self: self.providers)
    @rule(i=index, c=class_index, inv=inventory, kind=generation_kind)
    def set_inventory(self, i, c, inv, kind):
        rp, rc = self.provider(i), self.classes[c]
        sql_gen = self.sql_generation(rp, kind)
        what = f"set_inventory({rp}, gen={kind}, {rc}, {inv})"
        call_sql = lambda: self.sql.set_inventory(rp, sql_gen, rc, t.Inventory(*inv))  # noqa: E731
        if self.invalid_by_contract(inv) or self.stale_and_reserved_over_total(kind, [inv]):
            return self.sql_only(what, call_sql, errors.InvalidInventory)
        pl_gen = self.placement_generation(rp, kind)
        current = self.seen_details[rp]["inventories"]
        if rc in current:
            def on_placement():
                return self.placement.put_inventory(rp, pl_gen, rc, inv)
        else:
            # Placement creates one class with POST, which names no
            # generation; the whole-inventory PUT adds it with one.
            def on_placement():
                return self.placement.put_inventories(rp, pl_gen, {**current, rc: inv})
        _, error = self.both("inventory", what, call_sql, on_placement,
                             same=self.generations_match(rp))
        if error is None:
            self.refresh({rp: INVENTORY})

    @precondition(lambda self: self.providers)
    @rule(i=index, c=class_index, kind=generation_kind)
    def delete_inventory(self, i, c, kind):
        rp, rc = self.provider(i), self.classes[c]
        sql_gen = self.sql_generation(rp, kind)
        what = f"delete_inventory({rp}, gen={kind}, {rc})"
        call_sql = lambda: self.sql.delete_inventory(rp, sql_gen, rc)  # noqa: E731
        if kind == "stale" and rc in self.seen_details[rp]["inventories"]:
            # Known difference: Placement's DELETE of one class names no
            # generation, the contract's does.
            return self.sql_only(what, call_sql, errors.ProviderGenerationConflict)

        def on_placement():
            self.placement.delete_inventory(rp, rc)
            return self.placement.inventories(rp)[0]

        _, error = self.both("inventory", what, call_sql, on_placement,
                             same=self.generations_match(rp))
        if error is None:
            self.refresh({rp: INVENTORY})

    # -- traits, aggregates, resource classes --------------------------------------
    @precondition(lambda self: self.providers)
    @rule(i=index, chosen=st.frozensets(trait_index, max_size=3), kind=generation_kind)
    def set_traits(self, i, chosen, kind):
        rp = self.provider(i)
        traits = frozenset(self.traits[n] for n in chosen)
        sql_gen = self.sql_generation(rp, kind)
        _, error = self.both("traits", f"set_provider_traits({rp}, gen={kind}, {sorted(traits)})",
                             lambda: self.sql.set_provider_traits(rp, sql_gen, traits),
                             lambda: self.placement.put_traits(
                                 rp, self.placement_generation(rp, kind), traits),
                             same=self.generations_match(rp))
        if error is None:
            self.refresh({rp: ("traits",)})

    @precondition(lambda self: self.providers)
    @rule(i=index, chosen=aggregate_sets, kind=generation_kind)
    def set_aggregates(self, i, chosen, kind):
        rp = self.provider(i)
        aggs = frozenset(self.aggregates[n] for n in chosen)
        sql_gen = self.sql_generation(rp, kind)
        _, error = self.both("aggregates",
                             f"set_provider_aggregates({rp}, gen={kind}, {sorted(aggs)})",
                             lambda: self.sql.set_provider_aggregates(rp, sql_gen, aggs),
                             lambda: self.placement.put_aggregates(
                                 rp, self.placement_generation(rp, kind), aggs),
                             same=self.generations_match(rp))
        if error is None:
            self.refresh({rp: ("aggregates",)})

    @rule(c=st.sampled_from([0, 3, 4]), create=st.booleans())
    def resource_class(self, c, create):
        name = self.classes[c]
        if create and name in STANDARD_CLASSES:
            # Known difference: ensuring a standard class is a no-op in the
            # contract; Placement's PUT refuses a name without CUSTOM_.
            self.sql.ensure_resource_class(name)
            return
        if create:
            _, error = self.both("resource_class", f"ensure_resource_class({name})",
                                 lambda: self.sql.ensure_resource_class(name),
                                 lambda: self.placement.put_resource_class(name))
        else:
            _, error = self.both("resource_class", f"delete_resource_class({name})",
                                 lambda: self.sql.delete_resource_class(name),
                                 lambda: self.placement.delete_resource_class(name))
        if error is None and name not in STANDARD_CLASSES:
            (self.custom_classes.add if create else self.custom_classes.discard)(name)

    @precondition(lambda self: not self.trait_made)
    @rule()
    def second_custom_trait(self):
        name = self.traits[CUSTOM_U]
        self.both("trait", f"ensure_trait({name})",
                  lambda: self.sql.ensure_trait(name),
                  lambda: self.placement.put_trait(name))
        self.trait_made = True

    def compare_names(self):
        def ours(names):
            return {n for n in names if not n.startswith("CUSTOM_")
                    or n in self.classes or n in self.traits}

        self.both("query", "list_resource_classes()",
                  lambda: ours(self.sql.list_resource_classes()),
                  lambda: ours(self.placement.resource_classes()))
        self.both("query", "list_traits()",
                  lambda: ours(self.sql.list_traits()),
                  lambda: ours(self.placement.trait_names()))

    # -- allocations ----------------------------------------------------------------
    def allocations(self, chosen) -> dict[str, dict[str, int]]:
        """[(provider index or MISSING, class index -> amount)] -> allocations."""
        return {self.new_uuid() if i == MISSING else self.provider(i):
                {self.classes[c]: n for c, n in res.items()} for i, res in chosen}

    def consumer_generations(self, consumer: str, kind: str) -> tuple[int | None, int | None]:
        """The generation to send each side: (sql, Placement)."""
        sql_current = self.sql.get_consumer_allocations(consumer).generation
        pl_current = self.seen_consumers.get(consumer, NO_CONSUMER)[1]
        if consumer in self.leaked:
            pl_current = 0
        if kind == "none":
            return None, pl_current if consumer in self.leaked else None
        if kind == "stale":
            return ((0 if sql_current is None else stale(sql_current, kind)),
                    (0 if pl_current is None else stale(pl_current, kind)))
        return sql_current, pl_current

    def write(self, entries):
        """entries: [(consumer, generation kind, allocations, user, type)]."""
        writes, posted, what = [], {}, []
        for consumer, kind, allocs, user, consumer_type in entries:
            sql_gen, pl_gen = self.consumer_generations(consumer, kind)
            if not allocs and pl_gen is None and self.seen_consumers.get(
                    consumer, NO_CONSUMER) == NO_CONSUMER:
                # Known difference: an empty write for a consumer nobody
                # knows is a no-op in the contract; Placement would keep an
                # empty consumer record at generation 0.
                return
            writes.append(t.AllocationWrite(
                consumer_uuid=consumer, allocations=allocs, project_id=self.project,
                user_id=user, consumer_generation=sql_gen, consumer_type=consumer_type))
            posted[consumer] = (allocs, pl_gen, self.project, user, consumer_type)
            what.append(f"{consumer}: gen={kind} {allocs}")
        held = {rp for c, *_ in entries for rp in self.seen_consumers.get(c, NO_CONSUMER)[0]}
        named = {rp for _c, _k, allocs, *_ in entries for rp in allocs}
        def on_placement():
            try:
                return self.placement.post_allocations(posted)
            except Refused as exc:
                if expected_error("allocations", exc) is errors.ProviderNotFound:
                    # Known difference: Placement creates the request's new
                    # consumers first and keeps them, empty at generation 0,
                    # when it then refuses a provider that does not exist;
                    # sql creates nothing in a refused write.
                    self.leaked |= {c for c, *_ in entries
                                    if self.seen_consumers.get(c, NO_CONSUMER) == NO_CONSUMER}
                raise

        _, error = self.both("allocations", "write_allocations(" + "; ".join(what) + ")",
                             lambda: self.sql.write_allocations(writes), on_placement)
        if error is None:
            # A leaked record takes its first allocations at generation 1,
            # as a new consumer does; an empty write leaves it as it was.
            self.leaked -= {c for c, _kind, allocs, *_ in entries if allocs}
            self.refresh(dict.fromkeys(held | named, ALLOCATIONS),
                         consumers=[e[0] for e in entries], usages=True)

    @precondition(lambda self: self.providers)
    @rule(c=st.integers(0, CONSUMERS - 1), kind=consumer_generation_kind, chosen=picks,
          user=st.sampled_from(USERS), consumer_type=st.sampled_from(["INSTANCE", "MIGRATION"]))
    def put_allocations(self, c, kind, chosen, user, consumer_type):
        self.write([(self.consumers[c], kind, self.allocations(chosen), user, consumer_type)])

    @precondition(lambda self: self.providers)
    @rule(c=st.integers(0, CONSUMERS - 1),
          kinds=st.tuples(consumer_generation_kind, consumer_generation_kind),
          chosen=st.tuples(picks, picks), user=st.sampled_from(USERS))
    def write_two_consumers(self, c, kinds, chosen, user):
        """A move: two consumers replaced in one all-or-nothing write."""
        names = [self.consumers[c], self.consumers[(c + 1) % CONSUMERS]]
        entries = [(name, kind, self.allocations(p), user, consumer_type)
                   for name, kind, p, consumer_type
                   in zip(names, kinds, chosen, ["MIGRATION", "INSTANCE"], strict=True)]
        self.write(entries)

    @rule(c=st.integers(0, CONSUMERS - 1))
    def delete_allocations(self, c):
        consumer = self.consumers[c]
        held = set(self.seen_consumers.get(consumer, NO_CONSUMER)[0])

        def on_placement():
            try:
                self.placement.delete_allocations(consumer)
            except Refused as exc:
                # Removing what a consumer that holds nothing holds is done
                # in the contract; Placement says 404.
                if exc.status != 404 or held:
                    raise

        _, error = self.both("allocations", f"delete_allocations({consumer})",
                             lambda: self.sql.delete_allocations(consumer), on_placement)
        if error is None and held:
            # Known difference: the contract bumps the generation of every
            # provider the consumer held; Placement's DELETE does not.
            for rp in held:
                self.offset[rp] = self.offset.get(rp, 0) + 1
            self.refresh(dict.fromkeys(held, ALLOCATIONS), consumers=[consumer], usages=True)

    # -- queries ------------------------------------------------------------------
    def query_params(self, resources, required, forbidden, member_of, in_tree, suffix="",
                     banned=frozenset()):
        params = []
        if resources:
            params.append((f"resources{suffix}",
                           ",".join(f"{rc}:{n}" for rc, n in sorted(resources.items()))))
        if required or forbidden:
            params.append((f"required{suffix}", ",".join(
                [*sorted(required), *(f"!{n}" for n in sorted(forbidden))])))
        params.extend((f"member_of{suffix}", "in:" + ",".join(sorted(any_of)))
                      for any_of in member_of)
        # Forbidden aggregates, one at a time or as !in: (Placement 1.32).
        if len(banned) == 1:
            params.append((f"member_of{suffix}", "!" + next(iter(banned))))
        elif banned:
            params.append((f"member_of{suffix}", "!in:" + ",".join(sorted(banned))))
        if in_tree is not None:
            params.append((f"in_tree{suffix}", in_tree))
        return params

    def granular_parts(self, data):
        """Numbered groups, group_policy, root traits and same_subtree, as
        (CandidateQuery keyword arguments, query parameters)."""
        groups, params = {}, []
        for suffix in ("1", "2")[:data.draw(st.sampled_from([0, 0, 1, 2]), label="groups")]:
            resources, required, forbidden, member_of, in_tree = self.query_parts(data, False)
            banned = self.banned_aggregates(data)
            group_params = self.query_params(resources, required, forbidden, member_of,
                                             in_tree, suffix, banned)
            if not group_params:
                continue  # a group of nothing has no query parameter to send
            groups[suffix] = t.RequestGroup(resources=resources, required_traits=required,
                                            forbidden_traits=forbidden, member_of=member_of,
                                            in_tree=in_tree, forbidden_aggregates=banned)
            params += group_params
        policy = data.draw(st.sampled_from(["none", "isolate", None] if len(groups) > 1
                                           else [None, None, "none"]), label="group_policy")
        if policy is not None:
            params.append(("group_policy", policy))
        root = data.draw(st.frozensets(trait_index, max_size=2), label="root traits")
        names = sorted(self.traits[n] for n in root)
        root_required = frozenset(names[:1])
        root_forbidden = frozenset(names[1:])
        if names:
            params.append(("root_required", ",".join(
                [*root_required, *(f"!{n}" for n in root_forbidden)])))
        same_subtree = ()
        if len(groups) > 1 and data.draw(st.booleans(), label="same_subtree"):
            same_subtree = (frozenset(groups),)
            params.append(("same_subtree", ",".join(sorted(groups))))
        return {"groups": groups, "group_policy": policy, "root_required": root_required,
                "root_forbidden": root_forbidden, "same_subtree": same_subtree}, params

    def query_parts(self, data, need_resources: bool):
        resources = {self.classes[c]: n for c, n in
                     data.draw(amounts if need_resources else
                               st.dictionaries(class_index, st.integers(1, 4), max_size=2),
                               label="resources").items()}
        chosen = data.draw(st.frozensets(trait_index, max_size=2), label="required")
        banned = data.draw(st.frozensets(trait_index, max_size=1), label="forbidden")
        required = frozenset(self.traits[n] for n in chosen)
        forbidden = frozenset(self.traits[n] for n in banned) - required
        member_of = tuple(frozenset(self.aggregates[n] for n in any_of) for any_of in
                          data.draw(member_of_sets, label="member_of"))
        tree = data.draw(st.none() | index, label="in_tree")
        in_tree = None if tree is None else self.provider(tree)
        return resources, required, forbidden, member_of, in_tree

    def banned_aggregates(self, data) -> frozenset[str]:
        return frozenset(self.aggregates[n] for n in
                         data.draw(aggregate_sets, label="forbidden aggregates"))

    @precondition(lambda self: self.providers)
    @rule(data=st.data())
    def list_providers(self, data):
        resources, required, forbidden, member_of, in_tree = self.query_parts(data, False)
        query = t.ProviderQuery(resources=resources, required_traits=required,
                                forbidden_traits=forbidden, member_of=member_of,
                                in_tree=in_tree)
        params = self.query_params(resources, required, forbidden, member_of, in_tree)
        ours = set(self.providers)
        what = f"list_providers({query})"
        want = self.unknown_name(resources, required | forbidden)
        if want:
            return self.unknown_name_difference(
                what, want, lambda: self.sql.list_providers(query),
                lambda: self.placement.list_providers(params) & ours)
        self.both("query", what,
                  lambda: {rp.uuid for rp in self.sql.list_providers(query)} & ours,
                  lambda: self.placement.list_providers(params) & ours)

    def unknown_name(self, classes, traits) -> type[errors.PlacementError] | None:
        """The error sql gives a query naming a class or trait that does
        not exist (classes are checked first), or None."""
        if set(classes) - {*STANDARD_CLASSES, *self.custom_classes}:
            return errors.ResourceClassNotFound
        made = self.traits[:CUSTOM_U + 1] if self.trait_made else self.traits[:CUSTOM_U]
        if set(traits) - set(made):
            return errors.TraitNotFound
        return None

    def unknown_name_difference(self, what, want, on_sql, on_placement) -> None:
        """Known difference: a query naming a class or trait that does not
        exist is refused by sql always, by Placement only when its other
        filters (or another request group) have not already emptied the
        answer."""
        try:
            found, refused = on_placement(), None
        except Refused as exc:
            found, refused = None, exc
        if refused is None:
            assert not found or not found[0], (what, found)
        # A request with a bad shape as well may be refused for either
        # problem: Placement checks trait names as it parses, sql the shape
        # of the whole request first.
        with pytest.raises(errors.PlacementError) as caught:
            on_sql()
        assert type(caught.value) in (want, errors.InvalidRequest), (what, caught.value)

    @precondition(lambda self: self.providers)
    @rule(data=st.data(), limit=st.none() | st.integers(1, 3))
    def candidates(self, data, limit):
        granular, granular_params = self.granular_parts(data)
        resources, required, forbidden, member_of, in_tree = self.query_parts(
            data, not granular["groups"])
        banned = self.banned_aggregates(data)
        query = t.CandidateQuery(resources=resources, required_traits=required,
                                 forbidden_traits=forbidden, member_of=member_of,
                                 in_tree=in_tree, limit=limit, forbidden_aggregates=banned,
                                 **granular)
        params = [*self.query_params(resources, required, forbidden, member_of, in_tree,
                                     banned=banned),
                  *granular_params]
        ours = set(self.providers)
        what = f"get_allocation_candidates({query})"
        groups = (query, *query.groups.values())
        want = self.unknown_name(
            {rc for g in groups for rc in g.resources},
            {n for g in groups for n in g.required_traits | g.forbidden_traits}
            | query.root_required | query.root_forbidden)
        if want:
            return self.unknown_name_difference(
                what, want, lambda: self.sql.get_allocation_candidates(query),
                lambda: self.placement.allocation_candidates(params))

        def mine(found):
            requests_, summaries = found
            return ([r for r in requests_ if set(r[0]) <= ours],
                    {rp: s for rp, s in summaries.items() if rp in ours})

        def same(sql_found, placement_found):
            (sql_requests, sql_summaries) = sql_found
            (all_requests, all_summaries), (pl_requests, _pl_summaries) = placement_found
            everything = {canonical(r) for r in all_requests}
            if limit is None:
                return (sorted(map(canonical, sql_requests)) == sorted(everything)
                        and len(sql_requests) == len(all_requests)
                        and sql_summaries == all_summaries)
            roots = {all_summaries[rp][0] for r in sql_requests for rp in r[0]}
            return (len(sql_requests) == len(pl_requests) == min(limit, len(all_requests))
                    and {canonical(r) for r in sql_requests} <= everything
                    and sql_summaries == {rp: s for rp, s in all_summaries.items()
                                          if s[0] in roots})

        def on_placement():
            unlimited = mine(self.placement.allocation_candidates(params))
            if limit is None:
                return unlimited, unlimited
            limited = mine(self.placement.allocation_candidates([*params,
                                                                 ("limit", str(limit))]))
            return unlimited, limited

        self.both("query", what,
                  lambda: mine(candidates_of(self.sql.get_allocation_candidates(query))),
                  on_placement, same=same)

    # -- both sides hold the same -----------------------------------------------------
    def refresh(self, touched=(), consumers=(), usages=False, full=False):
        """Re-read Placement's answers for what a successful step changed.

        ``touched`` maps provider -> aspects the step may have changed. Every
        provider whose generation moved otherwise, or is new, is re-read in
        full; so is everything with ``full``.
        """
        touched = dict(touched)
        listed = {rp: p for rp, p in self.placement.providers().items()
                  if rp in self.every_uuid}
        for rp, found in listed.items():
            seen = self.seen_details.get(rp)
            if full or seen is None or (self.seen_providers.get(rp, found)[1] != found[1]
                                        and rp not in touched):
                self.seen_details[rp] = {aspect: READ[aspect](self.placement, rp)
                                         for aspect in READ}
            else:
                seen.update({aspect: READ[aspect](self.placement, rp)
                             for aspect in touched.get(rp, ())})
        self.seen_providers = listed
        for rp in set(self.seen_details) - set(listed):
            del self.seen_details[rp]
        for consumer in (self.consumers if full else consumers):
            self.seen_consumers[consumer] = self.placement.consumer(consumer)
        if full:
            self.seen_project = {user: self.placement.project_usages(self.project, user)
                                 for user in (None, *USERS)}
        elif usages:
            self.seen_project[None] = self.placement.project_usages(self.project)

    def sql_state(self, full: bool) -> dict:
        """Everything the sql side holds for this example; project usages
        per user only with ``full`` (Placement's are read again then)."""
        s, state = self.sql, {}
        for rp in self.providers:
            off = self.offset.get(rp, 0)
            name, gen, parent, root = provider_tuple(s.get_provider(rp))
            invs, traits, aggs = (s.get_inventories(rp), s.get_provider_traits(rp),
                                  s.get_provider_aggregates(rp))
            state[rp] = (
                (name, gen - off, parent, root),
                (invs.generation - off, traits.generation - off, aggs.generation - off),
                {"inventories": {rc: inventory_tuple(inv)
                                 for rc, inv in invs.inventories.items()},
                 "traits": traits.traits, "aggregates": aggs.aggregates,
                 "usages": s.get_provider_usages(rp),
                 "allocations": s.get_provider_allocations(rp)},
            )
        for consumer in self.consumers:
            state[consumer] = consumer_tuple(s.get_consumer_allocations(consumer))
        state["project"] = {user: s.get_project_usages(self.project, user)
                            for user in ((None, *USERS) if full else (None,))}
        return state

    def placement_state(self, full: bool) -> dict:
        # Placement reads inventories, traits and aggregates with the
        # provider's generation; it is the listing's.
        state = {rp: (found, (found[1],) * 3, self.seen_details[rp])
                 for rp, found in self.seen_providers.items()}
        for consumer in self.consumers:
            state[consumer] = self.seen_consumers.get(consumer, NO_CONSUMER)
        state["project"] = {user: self.seen_project.get(user, {})
                            for user in ((None, *USERS) if full else (None,))}
        return state

    @invariant()
    def same_state(self):
        self.steps += 1
        self.check(full=self.steps % FULL_READ_EVERY == 0)

    def check(self, full: bool) -> None:
        if full:
            self.refresh(full=True)
            self.compare_names()
        assert_same_state(self.sql_state(full), self.placement_state(full))

    def teardown(self):
        try:
            if self.steps:
                self.check(full=True)
        finally:
            self.clean_up()

    def clean_up(self):
        """Remove what this example made, on both sides, whatever happened."""
        for consumer in self.consumers:
            with contextlib.suppress(errors.PlacementError):
                self.sql.delete_allocations(consumer)
            with contextlib.suppress(Refused):
                self.placement.delete_allocations(consumer)
        # Children first: a provider is deleted once it has none left.
        remaining = set(self.every_uuid)
        for _ in range(MAX_PROVIDERS + 1):
            for rp in sorted(remaining):
                gone = 0
                try:
                    self.sql.delete_provider(rp)
                except errors.ProviderNotFound:
                    gone += 1
                except errors.PlacementError:
                    pass
                else:
                    gone += 1
                try:
                    self.placement.delete_provider(rp)
                except Refused as exc:
                    gone += exc.status == 404
                else:
                    gone += 1
                if gone == 2:
                    remaining.discard(rp)
        for name in self.classes[3:]:
            with contextlib.suppress(errors.PlacementError):
                self.sql.delete_resource_class(name)
            with contextlib.suppress(Refused):
                self.placement.delete_resource_class(name)


# What Placement is asked again for each aspect of a provider.
READ = {
    "inventories": lambda p, rp: p.inventories(rp)[1],
    "traits": lambda p, rp: p.traits(rp)[1],
    "aggregates": lambda p, rp: p.aggregates(rp)[1],
    "usages": lambda p, rp: p.usages(rp),
    "allocations": lambda p, rp: p.provider_allocations(rp),
}
INVENTORY = ("inventories", "usages")  # usages list every class in inventory
ALLOCATIONS = ("usages", "allocations")


def assert_same_state(sql_state: dict, placement_state: dict) -> None:
    if sql_state == placement_state:
        return
    lines = []
    for key in sorted(set(sql_state) | set(placement_state), key=str):
        ours, theirs = sql_state.get(key), placement_state.get(key)
        if ours != theirs:
            lines.append(f"  {key}:\n    sql       {ours!r}\n    Placement {theirs!r}")
    raise AssertionError("sql and Placement hold different state:\n" + "\n".join(lines))


@pytest.fixture(scope="module")
def placement_rest(tmp_path_factory):
    from tests.fixtures.placement_server import running_placement

    # Placement on SQLite: its answers do not depend on its engine, and one
    # request at a time is all the test sends.
    with running_placement(str(tmp_path_factory.mktemp("differential")), "sqlite") as server:
        client = rest.PlacementREST(server.url)
        yield client
        client.close()


@pytest.mark.parametrize("engine", databases.ENGINES)
def test_sql_backend_answers_as_placement(engine, placement_rest, conf, config, tmp_path):
    from rtframework.placement.sql.backend import SQLBackend

    budget = budgets().get(engine)
    if budget is None:
        pytest.skip(f"{engine} is not in RTF_TEST_DIFFERENTIAL")
    examples, steps = budget
    shrink = os.environ.get("RTF_TEST_DIFFERENTIAL_SHRINK", "1") != "0"
    with databases.temporary_database(engine, str(tmp_path)) as url:
        config.config(connection=url, group="placement_database")
        backend = SQLBackend(conf)
        try:
            machine = type("DifferentialRun", (Differential,), {
                "sql": backend, "placement": placement_rest})
            run_state_machine_as_test(machine, settings=settings(
                max_examples=examples, stateful_step_count=steps, deadline=None,
                derandomize=True, database=None,
                # Shrinking a long failing run can take longer than the run.
                phases=[p for p in Phase if p is not Phase.shrink or shrink],
                suppress_health_check=list(HealthCheck),
            ))
        finally:
            backend.close()
