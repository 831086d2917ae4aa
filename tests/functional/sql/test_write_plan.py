"""Applying a decided allocation write on every engine (PostgreSQL runs it
as one statement, the others statement by statement): a missed
compare-and-swap is reported and the transaction leaves nothing behind."""

from __future__ import annotations

import uuid

import pytest
import sqlalchemy as sa

from rtframework import db
from rtframework.placement import errors
from rtframework.placement import types as t
from rtframework.placement.sql import models as m
from rtframework.placement.sql import write_plan as wp
from rtframework.placement.sql.backend import SQLBackend


@pytest.fixture
def world(backend):
    """Two providers and one instance holding 2 VCPU on the first."""
    uuids = []
    for side in ("a", "b"):
        rp = backend.create_provider(f"plan-{side}-{uuid.uuid4().hex[:8]}")
        backend.set_inventories(rp.uuid, 0, {"VCPU": t.Inventory(total=8)})
        uuids.append(rp.uuid)
    instance = str(uuid.uuid4())
    backend.put_allocations(instance, {uuids[0]: {"VCPU": 2}}, project_id="p", user_id="u",
                            consumer_generation=None)
    return uuids, instance


def _rows(backend: SQLBackend):
    """Everything a write may change: providers, inventories (their stored
    usage), consumers, allocations."""
    with db.read(backend.engine) as conn:
        return tuple(
            sorted(tuple(row) for row in conn.execute(sa.select(table)))
            for table in (m.resource_providers, m.inventories, m.consumers, m.allocations)
        )


def _ids(backend: SQLBackend, providers: list[str], instance: str):
    """Provider ids, every provider's generation, the consumer's (id,
    generation) and the ids of its allocation rows."""
    with db.read(backend.engine) as conn:
        rp, c, a = m.resource_providers, m.consumers, m.allocations
        found = dict(conn.execute(
            sa.select(rp.c.uuid, rp.c.id).where(rp.c.uuid.in_(providers))).all())
        gens = dict(conn.execute(sa.select(rp.c.id, rp.c.generation)).all())
        consumer = conn.execute(sa.select(c.c.id, c.c.generation).where(c.c.uuid == instance)).one()
        rows = sorted(conn.execute(sa.select(a.c.id).where(a.c.consumer_id == instance)).scalars())
    return [found[u] for u in providers], gens, consumer, rows


def _move_plan(backend, world, *, provider_gen_delta=0, consumer_gen_delta=0) -> wp.WritePlan:
    """The instance moves from a to b (generations as read, shifted by the deltas)."""
    (a, b), instance = world
    (ida, idb), gens, (cid, cgen), rows = _ids(backend, [a, b], instance)
    return wp.WritePlan(
        providers=[(ida, gens[ida] + provider_gen_delta, "a"), (idb, gens[idb], "b")],
        replaced=rows,
        allocations=[(idb, instance, "VCPU", 2)],
        usage=[(ida, "VCPU", -2), (idb, "VCPU", 2)],
        kept=[wp.ConsumerRow(instance, "p", "u", "INSTANCE", cid, cgen + consumer_gen_delta)],
    )


def _apply(backend, plan):
    with db.transaction(backend.engine) as conn:
        wp.apply(conn, plan)


def test_a_plan_moves_rows_and_bumps_every_generation(backend, world):
    (a, b), instance = world
    before = backend.get_consumer_allocations(instance).generation
    gens = {u: backend.get_provider(u).generation for u in (a, b)}
    _apply(backend, _move_plan(backend, world))
    held = backend.get_consumer_allocations(instance)
    assert held.allocations == {b: {"VCPU": 2}}
    assert {u: backend.get_provider_usages(u) for u in (a, b)} == {a: {"VCPU": 0}, b: {"VCPU": 2}}
    assert held.generation == before + 1
    assert {u: backend.get_provider(u).generation for u in (a, b)} == \
        {u: g + 1 for u, g in gens.items()}


def test_a_stale_provider_generation_writes_nothing(backend, world):
    before = _rows(backend)
    with pytest.raises(wp.ProviderRaced) as raced:
        _apply(backend, _move_plan(backend, world, provider_gen_delta=-1))
    # The labels of every provider the plan touched (retried, then logged
    # if the retries run out).
    assert str(raced.value) == "a generation moved on resource provider(s) a, b"
    assert _rows(backend) == before


def test_old_rows_another_writer_removed_make_the_plan_a_race(backend, world):
    """The rows the plan read are gone (another writer replaced them):
    retried as a race, and nothing of the plan stays."""
    _providers, instance = world
    plan = _move_plan(backend, world)
    plan.replaced = plan.replaced + [max(plan.replaced) + 1000]
    before = _rows(backend)
    with pytest.raises(wp.ProviderRaced) as raced:
        _apply(backend, plan)
    assert str(raced.value) == (
        f"the allocations of consumer(s) {instance} changed while this write replaced them")
    assert _rows(backend) == before


def test_a_stale_consumer_generation_writes_nothing(backend, world):
    _providers, instance = world
    before = _rows(backend)
    plan = _move_plan(backend, world, consumer_gen_delta=-1)
    with pytest.raises(errors.ConsumerGenerationConflict) as conflict:
        _apply(backend, plan)
    assert str(conflict.value) == (
        "consumer generation conflict - expected a generation another writer just wrote "
        f"but got {plan.kept[0].generation} (consumer {instance})")
    assert _rows(backend) == before


def test_forgetting_a_consumer_at_a_stale_generation_writes_nothing(backend, world):
    (a, _b), instance = world
    (ida,), gens, (cid, cgen), rows = _ids(backend, [a], instance)
    before = _rows(backend)
    plan = wp.WritePlan(providers=[(ida, gens[ida], "a")], replaced=rows,
                        usage=[(ida, "VCPU", -2)],
                        forgotten=[wp.ConsumerRow(instance, "p", "u", "INSTANCE", cid, cgen + 1)])
    with pytest.raises(errors.ConsumerGenerationConflict) as conflict:
        _apply(backend, plan)
    assert str(conflict.value) == (
        "consumer generation conflict - expected a generation another writer just wrote "
        f"but got {cgen + 1} (consumer {instance})")
    assert _rows(backend) == before


def test_creating_a_consumer_that_exists_writes_nothing(backend, world):
    (a, _b), instance = world
    (ida,), gens, _consumer, _rows_held = _ids(backend, [a], instance)
    before = _rows(backend)
    plan = wp.WritePlan(providers=[(ida, gens[ida], "a")],
                        allocations=[(ida, instance, "VCPU", 1)],
                        created=[wp.ConsumerRow(instance, "p", "u", "INSTANCE")])
    with pytest.raises(sa.exc.IntegrityError):
        _apply(backend, plan)
    assert _rows(backend) == before
