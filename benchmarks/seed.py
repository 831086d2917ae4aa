"""Bulk seeding of the same cloud into the sql backend and into Placement.

Seeding 10,000 providers through either API takes minutes (four or more
writes per provider), and what is measured is reading them, so both
databases get the same rows by bulk INSERTs in their own schema: the same
uuids, names, inventories, usages and traits. ``candidates`` also measures
the API seeding rate on a small sample and prints it separately.

Two clouds: the flat one (``seed_sql``/``seed_placement``: one provider
per compute node) and the trees one (``seed_trees_sql``/
``seed_trees_placement``): each compute node a root with two NUMA
children holding its VCPU and MEMORY_MB, DISK_GB from one shared storage
provider (MISC_SHARES_VIA_AGGREGATE) per TREES_GROUP compute nodes, in
one aggregate with their roots. The trees cloud has uuids of its own
namespace and names ``bench-tree-*``, so it cannot collide with the flat
one (and scale's count of ``bench-cn-%`` names does not see it).
"""

from __future__ import annotations

import datetime
import uuid as uuidlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

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
        class_ids, trait_id, project_id, user_id = _placement_ids(engine, tb, TRAIT, now)
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


def _placement_ids(engine: sa.Engine, tb: Mapping[str, sa.Table], trait: str,
                   now: datetime.datetime) -> tuple[dict[str, int], int, int, int]:
    """Placement's ids of the standard classes seeded, of ``trait``, and of
    the benchmark's project and user (made when missing)."""
    with db.transaction(engine) as conn:
        rc, tr = tb["resource_classes"], tb["traits"]
        class_ids = dict(conn.execute(
            sa.select(rc.c.name, rc.c.id).where(rc.c.name.in_(list(INVENTORY)))).all())
        trait_id = conn.execute(sa.select(tr.c.id).where(tr.c.name == trait)).scalar_one()
        return (class_ids, trait_id, _external_id(conn, tb["projects"], PROJECT, now),
                _external_id(conn, tb["users"], USER, now))


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


# The trees cloud: a namespace and names of its own (see the docstring).
_TREES_NAMESPACE = uuidlib.UUID("5d0c2a8e-7f3b-4b6a-8e21-9a4c6f1d3e57")
TREES_GROUP = 100  # compute nodes per shared storage provider (and aggregate)
NUMA_INVENTORY = {  # on each of a compute node's two NUMA children
    "VCPU": t.Inventory(total=32, max_unit=32, allocation_ratio=4.0),
    "MEMORY_MB": t.Inventory(total=131072, reserved=256, max_unit=131072),
}
STORAGE_INVENTORY = {
    "DISK_GB": t.Inventory(total=TREES_GROUP * INVENTORY["DISK_GB"].total,
                           max_unit=INVENTORY["DISK_GB"].max_unit),
}
_TREES_CHUNK = 300  # compute nodes per transaction (about 900 providers)


def trees_nodes(providers: int) -> int:
    """Compute nodes of a trees cloud of about (at most) ``providers``
    providers: three per node, and one storage provider per group."""
    return providers * TREES_GROUP // (3 * TREES_GROUP + 1)


def trees_providers(nodes: int) -> int:
    """Providers of a trees cloud of ``nodes`` compute nodes."""
    return 3 * nodes + -(-nodes // TREES_GROUP)


@dataclass
class TreesRows:
    """Compute nodes start..stop-1 of the trees cloud, by uuid, with the
    storage providers and aggregates of the groups that begin among them."""

    # (uuid, name, parent uuid or None); (provider, class, inventory);
    # (provider, consumer, class, used)
    providers: list[tuple[str, str, str | None]] = field(default_factory=list)
    inventories: list[tuple[str, str, t.Inventory]] = field(default_factory=list)
    allocations: list[tuple[str, str, str, int]] = field(default_factory=list)
    sharing: list[str] = field(default_factory=list)  # providers with the sharing trait
    aggregates: list[str] = field(default_factory=list)
    members: list[tuple[str, str]] = field(default_factory=list)  # provider, aggregate

    @property
    def consumers(self) -> list[str]:
        return list(dict.fromkeys(consumer for _rp, consumer, _rc, _n in self.allocations))

    def usage(self) -> dict[tuple[str, str], int]:
        """Sum of the allocations per (provider, class)."""
        used: dict[tuple[str, str], int] = {}
        for rp, _consumer, rc, n in self.allocations:
            used[rp, rc] = used.get((rp, rc), 0) + n
        return used


def _tree_uuid(name: str) -> str:
    return str(uuidlib.uuid5(_TREES_NAMESPACE, name))


def trees_rows(start: int, stop: int) -> TreesRows:
    """Every other compute node has an instance: VCPU and MEMORY_MB of
    USAGE on its first NUMA child, DISK_GB of USAGE on its group's storage."""
    rows = TreesRows()
    for i in range(start, stop):
        group = i // TREES_GROUP
        storage, aggregate = _tree_uuid(f"storage-{group}"), _tree_uuid(f"agg-{group}")
        if i % TREES_GROUP == 0:
            rows.providers.append((storage, f"bench-tree-storage-{group}", None))
            rows.inventories += [(storage, rc, inv) for rc, inv in STORAGE_INVENTORY.items()]
            rows.sharing.append(storage)
            rows.aggregates.append(aggregate)
            rows.members.append((storage, aggregate))
        root = _tree_uuid(f"cn-{i}")
        rows.providers.append((root, f"bench-tree-cn-{i}", None))
        rows.members.append((root, aggregate))
        numa = [_tree_uuid(f"cn-{i}-numa{n}") for n in (0, 1)]
        for n, uuid in enumerate(numa):
            rows.providers.append((uuid, f"bench-tree-cn-{i}-numa{n}", root))
            rows.inventories += [(uuid, rc, inv) for rc, inv in NUMA_INVENTORY.items()]
        if i % 2 == 0:
            consumer = _tree_uuid(f"vm-{i}")
            rows.allocations += [(numa[0], consumer, rc, USAGE[rc]) for rc in NUMA_INVENTORY]
            rows.allocations.append((storage, consumer, "DISK_GB", USAGE["DISK_GB"]))
    return rows


def _trees_chunks(start: int, stop: int) -> Iterator[TreesRows]:
    for first in range(start, stop, _TREES_CHUNK):
        yield trees_rows(first, min(first + _TREES_CHUNK, stop))


def _ids(conn: sa.Connection, table: sa.Table, uuids: set[str]) -> dict[str, int]:
    rows = conn.execute(sa.select(table.c.uuid, table.c.id).where(table.c.uuid.in_(uuids)))
    return dict(rows.all())


def _insert_trees(conn: sa.Connection, rp: sa.Table, rows: TreesRows, extra: dict) -> dict:
    """The roots, then their children; the ids of every provider the rows
    name (storage providers of groups begun before included)."""
    conn.execute(sa.insert(rp), [{"uuid": uuid, "name": name, "generation": 1, **extra}
                                 for uuid, name, parent in rows.providers if parent is None])
    conn.execute(sa.update(rp).where(rp.c.root_provider_id.is_(None))
                 .values(root_provider_id=rp.c.id))
    ids = _ids(conn, rp, {uuid for uuid, _name, parent in rows.providers if parent is None}
               | {uuid for uuid, _agg in rows.members} | {a[0] for a in rows.allocations})
    children = [(uuid, name, ids[parent]) for uuid, name, parent in rows.providers
                if parent is not None]
    conn.execute(sa.insert(rp), [
        {"uuid": uuid, "name": name, "generation": 1, "parent_provider_id": parent,
         "root_provider_id": parent, **extra} for uuid, name, parent in children])
    return ids | _ids(conn, rp, {uuid for uuid, _name, _parent in children})


def _insert_aggregates(conn: sa.Connection, aggregates: sa.Table, members: sa.Table,
                       rows: TreesRows, ids: dict, extra: dict) -> None:
    if rows.aggregates:
        conn.execute(sa.insert(aggregates), [{"uuid": a, **extra} for a in rows.aggregates])
    aggregate_ids = _ids(conn, aggregates, {a for _rp, a in rows.members})
    conn.execute(sa.insert(members), [
        {"resource_provider_id": ids[rp], "aggregate_id": aggregate_ids[a], **extra}
        for rp, a in rows.members])


def seed_trees_sql(url: str, start: int, stop: int) -> None:
    """Compute nodes ``start``..``stop``-1 of the trees cloud in the sql
    backend's schema (seeded in order from 0: a group's storage provider
    comes with its first node)."""
    engine = db.create_engine(url)
    inv = m.inventories
    try:
        for rows in _trees_chunks(start, stop):
            with db.transaction(engine) as conn:
                ids = _insert_trees(conn, m.resource_providers, rows, {})
                used = rows.usage()
                conn.execute(sa.insert(inv), [
                    {"resource_provider_id": ids[rp], "resource_class": rc,
                     "used": used.get((rp, rc), 0), **_inventory_values(values)}
                    for rp, rc, values in rows.inventories])
                fresh = {(rp, rc) for rp, rc, _values in rows.inventories}
                earlier = [{"pid": ids[rp], "cls": rc, "n": n}
                           for (rp, rc), n in used.items() if (rp, rc) not in fresh]
                if earlier:  # usage of a storage provider seeded with an earlier range
                    conn.execute(sa.update(inv).where(
                        inv.c.resource_provider_id == sa.bindparam("pid"),
                        inv.c.resource_class == sa.bindparam("cls"),
                    ).values(used=inv.c.used + sa.bindparam("n")), earlier)
                conn.execute(sa.insert(m.consumers), [
                    {"uuid": c, "project_id": PROJECT, "user_id": USER, "generation": 1,
                     "consumer_type": "INSTANCE"} for c in rows.consumers])
                conn.execute(sa.insert(m.allocations), [
                    {"resource_provider_id": ids[rp], "consumer_id": c, "resource_class": rc,
                     "used": n} for rp, c, rc, n in rows.allocations])
                if rows.sharing:
                    conn.execute(sa.insert(m.provider_traits), [
                        {"resource_provider_id": ids[rp], "trait": t.SHARING_TRAIT}
                        for rp in rows.sharing])
                _insert_aggregates(conn, m.placement_aggregates, m.provider_aggregates, rows,
                                   ids, {})
    finally:
        engine.dispose()


def seed_trees_placement(url: str, start: int, stop: int) -> None:
    """The same compute nodes of the trees cloud in OpenStack Placement's
    schema (which keeps no usage with the inventories)."""
    engine = db.create_engine(url)
    meta = sa.MetaData()
    meta.reflect(engine, only=["resource_providers", "inventories", "allocations", "consumers",
                               "projects", "users", "resource_classes", "traits",
                               "resource_provider_traits", "placement_aggregates",
                               "resource_provider_aggregates"])
    tb = meta.tables
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    at = {"created_at": now}
    try:
        class_ids, trait_id, project_id, user_id = _placement_ids(engine, tb, t.SHARING_TRAIT,
                                                                  now)
        for rows in _trees_chunks(start, stop):
            with db.transaction(engine) as conn:
                ids = _insert_trees(conn, tb["resource_providers"], rows, at)
                conn.execute(sa.insert(tb["inventories"]), [
                    {"resource_provider_id": ids[rp], "resource_class_id": class_ids[name],
                     **at, **_inventory_values(values)} for rp, name, values in rows.inventories])
                conn.execute(sa.insert(tb["consumers"]), [
                    {"uuid": c, "project_id": project_id, "user_id": user_id, "generation": 1,
                     **at} for c in rows.consumers])
                conn.execute(sa.insert(tb["allocations"]), [
                    {"resource_provider_id": ids[rp], "consumer_id": c,
                     "resource_class_id": class_ids[name], "used": n, **at}
                    for rp, c, name, n in rows.allocations])
                if rows.sharing:
                    conn.execute(sa.insert(tb["resource_provider_traits"]), [
                        {"resource_provider_id": ids[rp], "trait_id": trait_id, **at}
                        for rp in rows.sharing])
                _insert_aggregates(conn, tb["placement_aggregates"],
                                   tb["resource_provider_aggregates"], rows, ids, at)
    finally:
        engine.dispose()
