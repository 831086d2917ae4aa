"""Differential: the sql backend and real OpenStack Placement agree.

A hypothesis state machine applies one random sequence of backend calls to
an SQLBackend (a fresh SQLite file per example) and to Placement through
the HTTPBackend, with the same uuids on both sides (fresh per example, so
what other tests left in Placement does not matter). After every step both
must hold the same providers, generations, inventories, allocations, usages
and consumer generations; a call must succeed on both or fail on both with
the same error class.

Needs both backends, so it runs where Placement is (RTF_TEST_BACKEND=http,
``tox -e functional-placement``).
"""

from __future__ import annotations

import os
import uuid

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from rtframework.placement import errors
from rtframework.placement import types as t

pytestmark = [
    pytest.mark.placement,
    pytest.mark.skipif(os.environ.get("RTF_TEST_BACKEND", "sql") != "http",
                       reason="compares with real Placement: RTF_TEST_BACKEND=http"),
]

MAX_PROVIDERS = 4
CONSUMERS = 3
CUSTOM_TRAIT = "CUSTOM_RTF_DIFFERENTIAL"
TRAITS = ("HW_CPU_X86_AVX2", "HW_CPU_X86_SSE", CUSTOM_TRAIT)
CLASSES = ("VCPU", "MEMORY_MB", "DISK_GB")

inventories = st.dictionaries(
    st.sampled_from(CLASSES),
    st.builds(
        t.Inventory,
        total=st.integers(1, 8),
        reserved=st.integers(0, 2),
        max_unit=st.sampled_from([t.MAX_INT, 4]),
        step_size=st.sampled_from([1, 1, 2]),
        allocation_ratio=st.sampled_from([1.0, 2.0]),
    ),
    max_size=3,
)
amounts = st.dictionaries(st.sampled_from(CLASSES), st.integers(1, 6), min_size=1, max_size=2)
# How the writer names the generation it read: right, one behind, or "new".
generation_kinds = st.sampled_from(["right", "right", "stale", "none"])


def outcome(call):
    """(value, None) or (None, error class) of one call."""
    try:
        return call(), None
    except errors.PlacementError as exc:
        return None, exc


class Differential(RuleBasedStateMachine):
    sql = None
    http = None

    def __init__(self):
        super().__init__()
        self.providers: list[str] = []
        self.consumers = [str(uuid.uuid4()) for _ in range(CONSUMERS)]
        self.project = f"diff-{uuid.uuid4().hex[:8]}"
        self.sql = type(self).new_sql()

    def teardown(self):
        self.sql.close()

    # -- applying one call to both sides --------------------------------
    def both(self, what: str, call):
        """Apply ``call(backend)`` to both; same value or same error class."""
        sql_value, sql_error = outcome(lambda: call(self.sql))
        http_value, http_error = outcome(lambda: call(self.http))
        if sql_error or http_error:
            assert type(sql_error) is type(http_error), (
                f"{what}: sql -> {sql_error!r}, placement -> {http_error!r}")
        else:
            assert sql_value == http_value, f"{what}: sql -> {sql_value!r}, placement -> " \
                                            f"{http_value!r}"
        return sql_value, sql_error

    def provider_generation(self, rp: str) -> int:
        return self.sql.get_inventories(rp).generation

    def consumer_generation(self, consumer: str, kind: str) -> int | None:
        current = self.sql.get_consumer_allocations(consumer).generation
        if kind == "none":
            return None
        if kind == "stale":
            return 0 if current is None else current - 1
        return current

    # -- rules ------------------------------------------------------------
    @precondition(lambda self: len(self.providers) < MAX_PROVIDERS)
    @rule(parent_index=st.none() | st.integers(0, MAX_PROVIDERS - 1))
    def create_provider(self, parent_index):
        rp = str(uuid.uuid4())
        parent = None
        if parent_index is not None and self.providers:
            parent = self.providers[parent_index % len(self.providers)]
        _, error = self.both(
            f"create_provider(parent={parent})",
            lambda b: b.create_provider(f"diff-{rp}", uuid=rp, parent_uuid=parent),
        )
        if error is None:
            self.providers.append(rp)

    @precondition(lambda self: self.providers)
    @rule(index=st.integers(0, MAX_PROVIDERS - 1), invs=inventories, stale=st.booleans())
    def set_inventories(self, index, invs, stale):
        rp = self.providers[index % len(self.providers)]
        if stale and any(inv.reserved > inv.total for inv in invs.values()):
            # Known difference: Placement checks the generation first, sql
            # the inventory first; each names one of the two real problems.
            return
        gen = self.provider_generation(rp) - stale
        self.both(f"set_inventories({rp}, gen={gen}, {invs})",
                  lambda b: b.set_inventories(rp, gen, invs))

    @precondition(lambda self: self.providers)
    @rule(index=st.integers(0, MAX_PROVIDERS - 1),
          traits=st.frozensets(st.sampled_from(TRAITS)), stale=st.booleans())
    def set_traits(self, index, traits, stale):
        rp = self.providers[index % len(self.providers)]
        if traits == self.sql.get_provider_traits(rp).traits:
            # Known difference: Placement leaves the generation alone when
            # the traits do not change; sql bumps it on every write.
            return
        gen = self.provider_generation(rp) - stale
        self.both(f"set_provider_traits({rp}, gen={gen}, {sorted(traits)})",
                  lambda b: b.set_provider_traits(rp, gen, traits))

    def allocations(self, picks):
        """[(provider index, amounts)] -> provider uuid -> amounts."""
        return {self.providers[i % len(self.providers)]: res for i, res in picks}

    @precondition(lambda self: self.providers)
    @rule(consumer=st.integers(0, CONSUMERS - 1), kind=generation_kinds,
          picks=st.lists(st.tuples(st.integers(0, MAX_PROVIDERS - 1), amounts), max_size=2))
    def put_allocations(self, consumer, kind, picks):
        uuid_ = self.consumers[consumer]
        gen = self.consumer_generation(uuid_, kind)
        allocs = self.allocations(picks)
        self.both(
            f"put_allocations({uuid_}, gen={gen}, {allocs})",
            lambda b: b.put_allocations(uuid_, allocs, project_id=self.project, user_id="u",
                                        consumer_generation=gen),
        )

    @precondition(lambda self: self.providers)
    @rule(first=st.integers(0, CONSUMERS - 1), kinds=st.tuples(generation_kinds,
                                                                generation_kinds),
          picks=st.tuples(
              st.lists(st.tuples(st.integers(0, MAX_PROVIDERS - 1), amounts), max_size=2),
              st.lists(st.tuples(st.integers(0, MAX_PROVIDERS - 1), amounts), max_size=2)))
    def write_two_consumers(self, first, kinds, picks):
        """A move: two consumers replaced in one all-or-nothing write."""
        names = [self.consumers[first], self.consumers[(first + 1) % CONSUMERS]]
        writes = [
            t.AllocationWrite(
                consumer_uuid=name, allocations=self.allocations(p), project_id=self.project,
                user_id="u", consumer_generation=self.consumer_generation(name, kind),
            )
            for name, kind, p in zip(names, kinds, picks, strict=True)
        ]
        self.both(f"write_allocations({writes})", lambda b: b.write_allocations(writes))

    @rule(consumer=st.integers(0, CONSUMERS - 1))
    def delete_allocations(self, consumer):
        uuid_ = self.consumers[consumer]
        self.both(f"delete_allocations({uuid_})", lambda b: b.delete_allocations(uuid_))

    @precondition(lambda self: self.providers)
    @rule(index=st.integers(0, MAX_PROVIDERS - 1))
    def delete_provider(self, index):
        rp = self.providers[index % len(self.providers)]
        _, error = self.both(f"delete_provider({rp})", lambda b: b.delete_provider(rp))
        if error is None:
            self.providers.remove(rp)

    @precondition(lambda self: self.providers)
    @rule(resources=amounts, required=st.frozensets(st.sampled_from(TRAITS), max_size=1))
    def candidates(self, resources, required):
        query = t.CandidateQuery(resources=resources, required_traits=required)
        ours = set(self.providers)

        def ask(b):
            found = b.get_allocation_candidates(query)
            # Placement holds other tests' providers too; compare ours only.
            requests = sorted(
                sorted((rp, rc, n) for rp, res in r.allocations.items() for rc, n in res.items())
                for r in found.allocation_requests if set(r.allocations) <= ours
            )
            summaries = {rp: s for rp, s in found.provider_summaries.items() if rp in ours}
            return requests, summaries

        self.both(f"get_allocation_candidates({query})", ask)

    # -- what both must agree on after every step -------------------------
    @invariant()
    def same_state(self):
        reads = ("get_provider", "get_inventories", "get_provider_traits",
                 "get_provider_allocations", "get_provider_usages")
        for rp in self.providers:
            for read in reads:
                self.both(f"{read}({rp})", lambda b, read=read, rp=rp: getattr(b, read)(rp))
        for consumer in self.consumers:
            self.both(f"get_consumer_allocations({consumer})",
                      lambda b, c=consumer: b.get_consumer_allocations(c))
        self.both(f"get_project_usages({self.project})",
                  lambda b: b.get_project_usages(self.project))

def test_sql_backend_and_placement_agree(http_backend, conf, config, tmp_path):
    from rtframework.placement.sql.backend import SQLBackend

    http_backend.ensure_trait(CUSTOM_TRAIT)

    def new_sql():
        url = f"sqlite:///{tmp_path / f'diff-{uuid.uuid4().hex[:8]}.sqlite'}"
        config.config(connection=url, group="placement_database")
        backend = SQLBackend(conf)
        backend.ensure_trait(CUSTOM_TRAIT)
        return backend

    machine = type("DifferentialRun", (Differential,), {
        "http": http_backend, "new_sql": staticmethod(new_sql)})
    run_state_machine_as_test(machine, settings=settings(
        max_examples=10, stateful_step_count=12, deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    ))
