"""Bulk seeding of the same cloud into the sql backend and into Placement.

Seeding 10,000 providers through either API takes minutes (four or more
writes per provider), and what is measured is reading them, so both
databases get the same rows by bulk INSERTs in their own schema: the same
uuids, names, inventories, usages and traits. ``candidates`` also measures
the API seeding rate on a small sample and prints it separately.
"""

from __future__ import annotations

import datetime
import uuid as uuidlib
from collections.abc import Iterator
from dataclasses import dataclass

import sqlalchemy as sa

from rtframework import db, mysql_engine
from rtframework.placement import types as t
from rtframework.placement.sql import models as m

_NAMESPACE = uuidlib.UUID("0b3f6d4e-98a1-4c1e-9a55-3c2f1f0b7d21")
PROJECT, USER = "bench-project", "bench-user"
TRAIT = "HW_CPU_X86_AVX2"
INVENTORY = {
    "VCPU": t.Inventory(total=64, max_unit=64, allocation_ratio=4.0),
    "MEMORY_MB": t.Inventory(total=262144, reserved=512, max_unit=262144),
    "DISK_GB": t.Inventory(total=2000, max_unit=2000),
}
USAGE = {"VCPU": 16, "MEMORY_MB": 32768, "DISK_GB": 200}
_CHUNK = 1000


@dataclass(frozen=True)
class SeededProvider:
    index: int
    uuid: str
    name: str
    consumer: str | None  # the instance using part of it, on every other provider
    has_trait: bool  # one provider in ten


def provider(index: int) -> SeededProvider:
    return SeededProvider(
        index=index,
        uuid=str(uuidlib.uuid5(_NAMESPACE, f"cn-{index}")),
        name=f"bench-cn-{index}",
        consumer=str(uuidlib.uuid5(_NAMESPACE, f"vm-{index}")) if index % 2 == 0 else None,
        has_trait=index % 10 == 0,
    )


def _chunks(start: int, stop: int) -> Iterator[list[SeededProvider]]:
    for first in range(start, stop, _CHUNK):
        yield [provider(i) for i in range(first, min(first + _CHUNK, stop))]


def _provider_ids(conn: sa.Connection, table: sa.Table, batch: list[SeededProvider]) -> dict:
    rows = conn.execute(sa.select(table.c.uuid, table.c.id)
                        .where(table.c.uuid.in_([p.uuid for p in batch])))
    return dict(rows.all())


def seed_sql(url: str, start: int, stop: int) -> None:
    """Providers ``start``..``stop``-1 in the sql backend's schema."""
    engine = db.create_engine(url)
    rp = m.resource_providers
    try:
        for batch in _chunks(start, stop):
            with db.transaction(engine) as conn:
                conn.execute(sa.insert(rp), [
                    {"uuid": p.uuid, "name": p.name, "generation": 1} for p in batch])
                conn.execute(sa.update(rp).where(rp.c.root_provider_id.is_(None))
                             .values(root_provider_id=rp.c.id))
                ids = _provider_ids(conn, rp, batch)
                conn.execute(sa.insert(m.inventories), [
                    {"resource_provider_id": ids[p.uuid], "resource_class": rc,
                     "used": USAGE.get(rc, 0) if p.consumer else 0, **_inventory_values(inv)}
                    for p in batch for rc, inv in INVENTORY.items()])
                used = [p for p in batch if p.consumer]
                conn.execute(sa.insert(m.consumers), [
                    {"uuid": p.consumer, "project_id": PROJECT, "user_id": USER,
                     "generation": 1, "consumer_type": "INSTANCE"} for p in used])
                conn.execute(sa.insert(m.allocations), [
                    {"resource_provider_id": ids[p.uuid], "consumer_id": p.consumer,
                     "resource_class": rc, "used": n}
                    for p in used for rc, n in USAGE.items()])
                traited = [p for p in batch if p.has_trait]
                if traited:
                    conn.execute(sa.insert(m.provider_traits), [
                        {"resource_provider_id": ids[p.uuid], "trait": TRAIT} for p in traited])
    finally:
        engine.dispose()


def analyze(url: str) -> None:
    """Refresh the planner statistics after a bulk load, as autovacuum
    would before long on a real server; without them PostgreSQL plans for
    empty tables. (SQLite keeps no statistics unless asked, and deployments
    do not ask, so it is left alone.)"""
    engine = db.create_engine(url)
    try:
        if engine.dialect.name == "postgresql":
            with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                conn.exec_driver_sql("ANALYZE")
        elif engine.dialect.name in mysql_engine.BACKENDS:
            with db.transaction(engine) as conn:
                for table in ("resource_providers", "inventories", "allocations", "consumers"):
                    conn.exec_driver_sql(f"ANALYZE TABLE {table}")
    finally:
        engine.dispose()


def _inventory_values(inv: t.Inventory) -> dict:
    return {"total": inv.total, "reserved": inv.reserved, "min_unit": inv.min_unit,
            "max_unit": inv.max_unit, "step_size": inv.step_size,
            "allocation_ratio": inv.allocation_ratio}


def seed_placement(url: str, start: int, stop: int) -> None:
    """The same providers in OpenStack Placement's schema (the server must
    have started once, so that standard classes and traits have ids)."""
    engine = db.create_engine(url)
    meta = sa.MetaData()
    meta.reflect(engine, only=["resource_providers", "inventories", "allocations", "consumers",
                               "projects", "users", "resource_classes", "traits",
                               "resource_provider_traits"])
    tb = meta.tables
    rp = tb["resource_providers"]
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    try:
        with db.transaction(engine) as conn:
            rc = tb["resource_classes"]
            class_ids = dict(conn.execute(
                sa.select(rc.c.name, rc.c.id).where(rc.c.name.in_(list(INVENTORY)))).all())
            tr = tb["traits"]
            trait_id = conn.execute(sa.select(tr.c.id).where(tr.c.name == TRAIT)).scalar_one()
            project_id = _external_id(conn, tb["projects"], PROJECT, now)
            user_id = _external_id(conn, tb["users"], USER, now)
        for batch in _chunks(start, stop):
            with db.transaction(engine) as conn:
                conn.execute(sa.insert(rp), [
                    {"uuid": p.uuid, "name": p.name, "generation": 1, "created_at": now}
                    for p in batch])
                conn.execute(sa.update(rp).where(rp.c.root_provider_id.is_(None))
                             .values(root_provider_id=rp.c.id))
                ids = _provider_ids(conn, rp, batch)
                conn.execute(sa.insert(tb["inventories"]), [
                    {"resource_provider_id": ids[p.uuid], "resource_class_id": class_ids[name],
                     "created_at": now, **_inventory_values(inv)}
                    for p in batch for name, inv in INVENTORY.items()])
                used = [p for p in batch if p.consumer]
                conn.execute(sa.insert(tb["consumers"]), [
                    {"uuid": p.consumer, "project_id": project_id, "user_id": user_id,
                     "generation": 1, "created_at": now} for p in used])
                conn.execute(sa.insert(tb["allocations"]), [
                    {"resource_provider_id": ids[p.uuid], "consumer_id": p.consumer,
                     "resource_class_id": class_ids[name], "used": n, "created_at": now}
                    for p in used for name, n in USAGE.items()])
                traited = [p for p in batch if p.has_trait]
                if traited:
                    conn.execute(sa.insert(tb["resource_provider_traits"]), [
                        {"resource_provider_id": ids[p.uuid], "trait_id": trait_id,
                         "created_at": now} for p in traited])
    finally:
        engine.dispose()


def _external_id(conn: sa.Connection, table: sa.Table, external: str, now) -> int:
    found = conn.execute(sa.select(table.c.id).where(table.c.external_id == external)).first()
    if found:
        return found[0]
    return conn.execute(sa.insert(table).values(external_id=external, created_at=now)) \
        .inserted_primary_key[0]


FULL_CONSUMER_PREFIX = "full"


def fill_sql(url: str, count: int) -> None:
    """Make the trees of providers 0..``count``-1 (the lowest ids) too full
    for any request: one more consumer takes every VCPU left."""
    engine = db.create_engine(url)
    rp = m.resource_providers
    capacity = int(INVENTORY["VCPU"].capacity)
    try:
        for batch in _chunks(0, count):
            with db.transaction(engine) as conn:
                ids = _provider_ids(conn, rp, batch)
                full = [(p, str(uuidlib.uuid5(_NAMESPACE, f"{FULL_CONSUMER_PREFIX}-{p.index}")))
                        for p in batch]
                conn.execute(sa.insert(m.consumers), [
                    {"uuid": consumer, "project_id": PROJECT, "user_id": USER,
                     "generation": 1, "consumer_type": "INSTANCE"} for _p, consumer in full])
                conn.execute(sa.insert(m.allocations), [
                    {"resource_provider_id": ids[p.uuid], "consumer_id": consumer,
                     "resource_class": "VCPU",
                     "used": capacity - (USAGE["VCPU"] if p.consumer else 0)}
                    for p, consumer in full])
                inv = m.inventories
                conn.execute(sa.update(inv).where(
                    inv.c.resource_provider_id.in_(list(ids.values())),
                    inv.c.resource_class == "VCPU").values(used=capacity))
    finally:
        engine.dispose()
