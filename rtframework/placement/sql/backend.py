"""SQLBackend: the placement contract over a SQL database.

SQLite (embedded, one machine), PostgreSQL and MySQL/MariaDB. Every write
is one transaction that bumps the generation of each provider it touches
with a compare-and-swap UPDATE; see ``allocations`` for why that keeps
capacity right between concurrent writers at READ COMMITTED.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import logging
import os
import uuid as uuidlib
from collections.abc import Iterator, Mapping, Sequence

import sqlalchemy as sa
from oslo_config import cfg

from rtframework import db, retry
from rtframework.conf import database as conf_database
from rtframework.placement import backend as contract
from rtframework.placement import errors, validation
from rtframework.placement import types as t
from rtframework.placement.sql import allocations as alloc
from rtframework.placement.sql import candidates, queries
from rtframework.placement.sql import models as m
from rtframework.placement.sql.dberrors import (
    is_connection_lost,
    is_transient,
    reason,
    translated,
)
from rtframework.placement.sql.write_plan import ProviderRaced

LOG = logging.getLogger(__name__)

SCRIPT_LOCATION = os.path.join(os.path.dirname(__file__), "migrations")
VERSION_TABLE = "placement_alembic_version"
GROUP = "placement_database"


def upgrade_schema(engine: sa.Engine) -> None:
    db.upgrade(SCRIPT_LOCATION, engine, VERSION_TABLE)


def sync_schema(conf: cfg.ConfigOpts) -> None:
    """Bring the placement database to the newest schema (``rtf db sync``)."""
    engine = db.engine_for(conf, GROUP)
    try:
        with _opening(conf):
            upgrade_schema(engine)
    finally:
        engine.dispose()


@contextlib.contextmanager
def _opening(conf: cfg.ConfigOpts) -> Iterator[None]:
    """A database that cannot be opened is BackendUnavailable naming
    ``[placement_database] connection``."""
    try:
        with db.opening(conf, GROUP):
            yield
    except db.DatabaseError as exc:
        raise errors.BackendUnavailable(str(exc)) from exc.__cause__


class SQLBackend(contract.PlacementBackend):
    """Placement backed by ``[placement_database] connection``."""

    @classmethod
    def register_opts(cls, conf: cfg.ConfigOpts) -> None:
        conf_database.register_opts(conf)

    def __init__(self, conf: cfg.ConfigOpts) -> None:
        super().__init__(conf)
        self.engine = db.engine_for(conf, GROUP)
        self.backoff = retry.Backoff(retries=conf.placement.conflict_retries)
        with _opening(conf):
            if conf[GROUP].auto_sync:
                upgrade_schema(self.engine)
            else:
                try:
                    db.require_current(SCRIPT_LOCATION, self.engine, VERSION_TABLE,
                                       "placement")
                except db.SchemaNotCurrent as exc:
                    self.engine.dispose()
                    raise errors.BackendUnavailable(str(exc)) from exc

    def close(self) -> None:
        self.engine.dispose()

    def _read(self):
        return db.read(self.engine)

    def _write(self):
        return db.transaction(self.engine)

    # -- resource classes and traits ------------------------------------
    def list_resource_classes(self) -> list[str]:
        with translated(), self._read() as conn:
            custom = conn.execute(sa.select(m.resource_classes.c.name)).scalars()
            return sorted(validation.STANDARD_CLASSES | set(custom))

    def ensure_resource_class(self, name: str) -> None:
        validation.check_resource_class_name(name)
        if name in validation.STANDARD_CLASSES:
            return
        with translated(), self._write() as conn:
            queries.insert_ignoring_duplicates(conn, m.resource_classes, [{"name": name}])

    def delete_resource_class(self, name: str) -> None:
        validation.check_custom_resource_class_name(name)
        rc, inv = m.resource_classes, m.inventories
        with translated(), self._write() as conn:
            if not queries.custom_names(conn, rc, [name]):
                raise errors.ResourceClassNotFound(f"resource class {name} not found")
            users = conn.execute(
                sa.select(sa.func.count()).select_from(inv).where(inv.c.resource_class == name)
            ).scalar_one()
            if users:
                raise errors.ResourceClassInUse(
                    f"resource class {name} is in the inventory of {users} provider(s)"
                )
            conn.execute(sa.delete(rc).where(rc.c.name == name))

    def list_traits(self, prefix: str | None = None) -> list[str]:
        with translated(), self._read() as conn:
            custom = set(conn.execute(sa.select(m.traits.c.name)).scalars())
        names = validation.STANDARD_TRAITS | custom
        return sorted(n for n in names if prefix is None or n.startswith(prefix))

    def ensure_trait(self, name: str) -> None:
        validation.check_trait_name(name)
        if name in validation.STANDARD_TRAITS:
            return
        with translated(), self._write() as conn:
            queries.insert_ignoring_duplicates(conn, m.traits, [{"name": name}])

    # -- providers -------------------------------------------------------
    def create_provider(
        self, name: str, uuid: str | None = None, parent_uuid: str | None = None
    ) -> t.ResourceProvider:
        uuid = validation.normalize_uuid(
            str(uuidlib.uuid4()) if uuid is None else uuid, "provider uuid")
        parent_uuid = validation.normalize_optional_uuid(parent_uuid, "parent provider uuid")
        validation.check_provider_name(name)
        if parent_uuid is not None and parent_uuid == uuid:
            raise errors.InvalidRequest(f"provider {uuid} cannot be its own parent")
        rp = m.resource_providers
        try:
            with self._write() as conn:
                # A missing parent is reported before a taken name or uuid,
                # as Placement does.
                parent = queries.provider_row(conn, parent_uuid) if parent_uuid else None
                self._check_unique(conn, name=name, uuid=uuid)
                new_id = conn.execute(
                    sa.insert(rp).values(
                        uuid=uuid, name=name, generation=0,
                        parent_provider_id=parent.id if parent else None,
                    )
                ).inserted_primary_key[0]
                root_id = self._root_id(conn, parent.id) if parent else new_id
                conn.execute(
                    sa.update(rp).where(rp.c.id == new_id).values(root_provider_id=root_id)
                )
                created = queries.to_provider(queries.provider_row(conn, uuid))
        except sa.exc.IntegrityError as exc:
            # Lost a race with a creator of the same name or uuid.
            with translated(), self._read() as conn:
                self._check_unique(conn, name=name, uuid=uuid)
            raise errors.Conflict(
                f"could not create provider {uuid} ({name}): {reason(exc)}") from exc
        except sa.exc.SQLAlchemyError as exc:
            with translated():
                raise exc
        LOG.info("created resource provider %s (%s), parent %s", uuid, name, parent_uuid)
        return created

    @staticmethod
    def _check_unique(conn: sa.Connection, *, name: str, uuid: str | None,
                      ignore_id: int | None = None) -> None:
        rp = m.resource_providers
        if uuid is not None and conn.execute(
            sa.select(rp.c.id).where(rp.c.uuid == uuid)
        ).first():
            raise errors.DuplicateUUID(f"a resource provider with uuid {uuid} already exists")
        other = conn.execute(sa.select(rp.c.id, rp.c.uuid).where(rp.c.name == name)).first()
        if other is not None and other.id != ignore_id:
            raise errors.DuplicateName(
                f"a resource provider named {name!r} already exists ({other.uuid})"
            )

    @staticmethod
    def _root_id(conn: sa.Connection, provider_id: int) -> int:
        rp = m.resource_providers
        return conn.execute(
            sa.select(rp.c.root_provider_id).where(rp.c.id == provider_id)
        ).scalar_one()

    def get_provider(self, uuid: str) -> t.ResourceProvider:
        uuid = validation.normalize_uuid(uuid, "provider uuid")
        with translated(), self._read() as conn:
            return queries.to_provider(queries.provider_row(conn, uuid))

    def list_providers(self, query: t.ProviderQuery | None = None) -> list[t.ResourceProvider]:
        query = validation.provider_query(query)
        rp = m.resource_providers
        stmt = queries.provider_select()
        if query.uuid is not None:
            stmt = stmt.where(rp.c.uuid == query.uuid)
        if query.name is not None:
            stmt = stmt.where(rp.c.name == query.name)
        if query.in_tree is not None:
            tree = rp.alias("tree")
            stmt = stmt.where(rp.c.root_provider_id == (
                sa.select(tree.c.root_provider_id).where(tree.c.uuid == query.in_tree)
                .scalar_subquery()
            ))
        stmt = stmt.where(
            *queries.member_of_clause(rp.c.id, query.member_of),
            *queries.traits_clause(rp.c.id, query.required_traits, query.forbidden_traits),
            *(queries.has_room_clause(rp.c.id, rc, amount)
              for rc, amount in sorted(query.resources.items())),
        )
        with translated(), self._read() as conn:
            queries.check_known_names(conn, query.resources,
                                      query.required_traits | query.forbidden_traits)
            return [queries.to_provider(row) for row in conn.execute(stmt)]

    def update_provider(
        self, uuid: str, *, name: str, parent_uuid: str | None = None
    ) -> t.ResourceProvider:
        uuid = validation.normalize_uuid(uuid, "provider uuid")
        parent_uuid = validation.normalize_optional_uuid(parent_uuid, "parent provider uuid")
        validation.check_provider_name(name)
        rp = m.resource_providers
        with translated(), self._write() as conn:
            row = queries.provider_row(conn, uuid)
            values: dict = {"name": name}
            # The new parent is checked before the name, as Placement does.
            if parent_uuid is not None and parent_uuid != row.parent_uuid:
                parent = queries.provider_row(conn, parent_uuid)
                # The new parent must not sit below the provider itself.
                if self._in_subtree(conn, row.id, parent.id):
                    raise errors.InvalidRequest(
                        f"provider {parent_uuid} is {uuid} or one of its descendants and "
                        f"cannot become its parent"
                    )
                values["parent_provider_id"] = parent.id
                new_root = self._root_id(conn, parent.id)
                subtree = self._subtree_ids(conn, row.id)
                conn.execute(sa.update(rp).where(rp.c.id.in_(subtree))
                             .values(root_provider_id=new_root))
            self._check_unique(conn, name=name, uuid=None, ignore_id=row.id)
            conn.execute(sa.update(rp).where(rp.c.id == row.id).values(**values))
            return queries.to_provider(queries.provider_row(conn, uuid))

    @staticmethod
    def _subtree_ids(conn: sa.Connection, provider_id: int) -> list[int]:
        rp = m.resource_providers
        found, frontier = [provider_id], [provider_id]
        while frontier:
            frontier = list(conn.execute(
                sa.select(rp.c.id).where(rp.c.parent_provider_id.in_(frontier))
            ).scalars())
            found.extend(frontier)
        return found

    def _in_subtree(self, conn: sa.Connection, top: int, candidate: int) -> bool:
        return candidate in self._subtree_ids(conn, top)

    def delete_provider(self, uuid: str) -> None:
        uuid = validation.normalize_uuid(uuid, "provider uuid")
        rp, a = m.resource_providers, m.allocations
        with translated(), self._write() as conn:
            row = queries.provider_row(conn, uuid)
            # Lock the row first so no allocation write slips in between the
            # checks and the delete.
            conn.execute(sa.update(rp).where(rp.c.id == row.id)
                         .values(generation=rp.c.generation + 1))
            children = conn.execute(
                sa.select(sa.func.count()).select_from(rp).where(rp.c.parent_provider_id == row.id)
            ).scalar_one()
            if children:
                raise errors.CannotDeleteParent(
                    f"resource provider {queries.label(row)} has {children} child provider(s)"
                )
            consumers = conn.execute(
                sa.select(sa.func.count(sa.distinct(a.c.consumer_id)))
                .where(a.c.resource_provider_id == row.id)
            ).scalar_one()
            if consumers:
                raise errors.ProviderInUse(
                    f"resource provider {queries.label(row)} has allocations of "
                    f"{consumers} consumer(s)"
                )
            for table in (m.inventories, m.provider_traits, m.provider_aggregates):
                conn.execute(sa.delete(table).where(table.c.resource_provider_id == row.id))
            # A root references itself; clear that before the row goes.
            conn.execute(sa.update(rp).where(rp.c.id == row.id).values(root_provider_id=None))
            conn.execute(sa.delete(rp).where(rp.c.id == row.id))
        LOG.info("deleted resource provider %s", queries.label(row))

    # -- inventory -------------------------------------------------------
    def get_inventories(self, uuid: str) -> t.ProviderInventories:
        uuid = validation.normalize_uuid(uuid, "provider uuid")
        with translated(), self._read() as conn:
            row = queries.provider_row(conn, uuid)
            invs = queries.inventories_of(conn, [row.id]).get(row.id, {})
            return t.ProviderInventories(generation=row.generation, inventories=invs)

    def set_inventories(
        self, uuid: str, generation: int, inventories: Mapping[str, t.Inventory]
    ) -> int:
        uuid = validation.normalize_uuid(uuid, "provider uuid")
        validation.check_generation(generation, f"generation of provider {uuid}")
        inventories = validation.check_inventories(uuid, inventories)
        with translated(), self._write() as conn:
            return self._replace_inventories(conn, uuid, generation, inventories, replace=True)

    def set_inventory(
        self, uuid: str, generation: int, resource_class: str, inventory: t.Inventory
    ) -> int:
        uuid = validation.normalize_uuid(uuid, "provider uuid")
        validation.check_generation(generation, f"generation of provider {uuid}")
        inventories = validation.check_inventories(uuid, {resource_class: inventory})
        with translated(), self._write() as conn:
            return self._replace_inventories(conn, uuid, generation, inventories, replace=False)

    def delete_inventory(self, uuid: str, generation: int, resource_class: str) -> int:
        uuid = validation.normalize_uuid(uuid, "provider uuid")
        validation.check_generation(generation, f"generation of provider {uuid}")
        validation.check_resource_class_name(resource_class)
        with translated(), self._write() as conn:
            row = queries.provider_row(conn, uuid)
            current = queries.inventories_of(conn, [row.id]).get(row.id, {})
            if resource_class not in current:
                raise errors.NotFound(
                    f"provider {queries.label(row)} has no inventory of {resource_class}"
                )
            new_gen = queries.bump_generation(conn, row, generation)
            self._remove_classes(conn, row, [resource_class])
            return new_gen

    def _replace_inventories(
        self, conn: sa.Connection, uuid: str, generation: int,
        inventories: dict[str, t.Inventory], *, replace: bool,
    ) -> int:
        row = queries.provider_row(conn, uuid)
        # CAS first: it locks the provider row, so the reads below are not
        # raced by an allocation write; and a stale generation is reported
        # before an unknown class, as Placement does.
        new_gen = queries.bump_generation(conn, row, generation)
        custom = [rc for rc in inventories if rc not in validation.STANDARD_CLASSES]
        missing = set(custom) - queries.custom_names(conn, m.resource_classes, custom)
        if missing:
            raise errors.ResourceClassNotFound(
                f"resource class(es) {', '.join(sorted(missing))} not found "
                f"(inventory of provider {queries.label(row)})"
            )
        current = queries.inventories_of(conn, [row.id]).get(row.id, {})
        usages = queries.usages_of(conn, [row.id])
        if replace:
            self._remove_classes(conn, row, sorted(set(current) - set(inventories)))
        inv_t = m.inventories
        for rc, inv in sorted(inventories.items()):
            used = usages.get((row.id, rc), 0)
            if used > inv.capacity:
                LOG.warning(
                    "inventory of %s on provider %s shrinks below usage: used %d > capacity %s",
                    rc, queries.label(row), used, inv.capacity,
                )
            values = {
                "total": inv.total, "reserved": inv.reserved, "min_unit": inv.min_unit,
                "max_unit": inv.max_unit, "step_size": inv.step_size,
                "allocation_ratio": float(inv.allocation_ratio),
            }
            if rc in current:
                if current[rc] != inv:
                    conn.execute(sa.update(inv_t).where(
                        inv_t.c.resource_provider_id == row.id, inv_t.c.resource_class == rc,
                    ).values(**values))
            else:
                conn.execute(sa.insert(inv_t).values(
                    resource_provider_id=row.id, resource_class=rc, **values))
        return new_gen

    @staticmethod
    def _remove_classes(conn: sa.Connection, row, classes: Sequence[str]) -> None:
        if not classes:
            return
        inv, a = m.inventories, m.allocations
        in_use = conn.execute(
            sa.select(a.c.resource_class, sa.func.sum(a.c.used))
            .where(a.c.resource_provider_id == row.id, a.c.resource_class.in_(list(classes)))
            .group_by(a.c.resource_class)
        ).all()
        if in_use:
            detail = ", ".join(f"{rc} (used {int(used)})" for rc, used in sorted(in_use))
            raise errors.InventoryInUse(
                f"cannot remove inventory of {detail} from provider {queries.label(row)}: "
                f"allocations exist"
            )
        conn.execute(sa.delete(inv).where(
            inv.c.resource_provider_id == row.id, inv.c.resource_class.in_(list(classes))
        ))

    # -- traits and aggregates of a provider -----------------------------
    def get_provider_traits(self, uuid: str) -> t.ProviderTraits:
        uuid = validation.normalize_uuid(uuid, "provider uuid")
        with translated(), self._read() as conn:
            row = queries.provider_row(conn, uuid)
            traits = queries.traits_of(conn, [row.id])[row.id]
            return t.ProviderTraits(generation=row.generation, traits=traits)

    def set_provider_traits(self, uuid: str, generation: int, traits: frozenset[str]) -> int:
        uuid = validation.normalize_uuid(uuid, "provider uuid")
        validation.check_generation(generation, f"generation of provider {uuid}")
        traits = validation.trait_set(traits)
        pt = m.provider_traits
        with translated(), self._write() as conn:
            row = queries.provider_row(conn, uuid)
            # A stale generation is reported before an unknown trait, and a
            # write that changes nothing keeps the generation, as Placement
            # does; the CAS below still guards a real change.
            queries.keep_generation(row, generation)
            custom = [n for n in traits if n not in validation.STANDARD_TRAITS]
            unknown = set(custom) - queries.custom_names(conn, m.traits, custom)
            if unknown:
                raise errors.TraitNotFound(
                    f"trait(s) {', '.join(sorted(unknown))} not found "
                    f"(traits of provider {queries.label(row)})"
                )
            if queries.traits_of(conn, [row.id])[row.id] == traits:
                return generation
            new_gen = queries.bump_generation(conn, row, generation)
            conn.execute(sa.delete(pt).where(pt.c.resource_provider_id == row.id))
            if traits:
                conn.execute(sa.insert(pt), [
                    {"resource_provider_id": row.id, "trait": name} for name in sorted(traits)
                ])
            return new_gen

    def get_provider_aggregates(self, uuid: str) -> t.ProviderAggregates:
        uuid = validation.normalize_uuid(uuid, "provider uuid")
        with translated(), self._read() as conn:
            row = queries.provider_row(conn, uuid)
            return t.ProviderAggregates(
                generation=row.generation, aggregates=queries.aggregates_of(conn, row.id)
            )

    def set_provider_aggregates(
        self, uuid: str, generation: int, aggregates: frozenset[str]
    ) -> int:
        uuid = validation.normalize_uuid(uuid, "provider uuid")
        validation.check_generation(generation, f"generation of provider {uuid}")
        aggregates = validation.aggregates(aggregates)
        pa, agg_t = m.provider_aggregates, m.placement_aggregates
        with translated(), self._write() as conn:
            row = queries.provider_row(conn, uuid)
            new_gen = queries.bump_generation(conn, row, generation)
            queries.insert_ignoring_duplicates(
                conn, agg_t, [{"uuid": a} for a in sorted(aggregates)]
            )
            conn.execute(sa.delete(pa).where(pa.c.resource_provider_id == row.id))
            if aggregates:
                ids = conn.execute(
                    sa.select(agg_t.c.id).where(agg_t.c.uuid.in_(sorted(aggregates)))
                ).scalars().all()
                conn.execute(sa.insert(pa), [
                    {"resource_provider_id": row.id, "aggregate_id": i} for i in ids
                ])
            return new_gen

    # -- allocations -----------------------------------------------------
    def get_consumer_allocations(self, consumer_uuid: str) -> t.ConsumerAllocations:
        consumer_uuid = validation.normalize_uuid(consumer_uuid, "consumer uuid")
        c = m.consumers
        with translated(), self._read() as conn:
            row = conn.execute(sa.select(c).where(c.c.uuid == consumer_uuid)).first()
            held = alloc.consumer_allocations(conn, [consumer_uuid]).get(consumer_uuid, {})
        if row is None:
            return t.ConsumerAllocations(consumer_uuid=consumer_uuid, allocations={})
        return t.ConsumerAllocations(
            consumer_uuid=consumer_uuid,
            allocations={p: dict(r) for p, r in held.items()},
            generation=row.generation, project_id=row.project_id, user_id=row.user_id,
            consumer_type=row.consumer_type,
        )

    def get_consumers_allocations(
        self, consumer_uuids: Sequence[str]
    ) -> dict[str, t.ConsumerAllocations]:
        uuids = [validation.normalize_uuid(u, "consumer uuid") for u in consumer_uuids]
        with translated(), self._read() as conn:
            return alloc.consumers_allocations(conn, uuids)

    def get_provider_allocations(self, uuid: str) -> dict[str, dict[str, int]]:
        uuid = validation.normalize_uuid(uuid, "provider uuid")
        a = m.allocations
        found: dict[str, dict[str, int]] = {}
        with translated(), self._read() as conn:
            row = queries.provider_row(conn, uuid)
            for consumer, rc, used in conn.execute(
                sa.select(a.c.consumer_id, a.c.resource_class, a.c.used)
                .where(a.c.resource_provider_id == row.id).order_by(a.c.id)
            ):
                per = found.setdefault(consumer, {})
                per[rc] = per.get(rc, 0) + used
        return found

    def write_allocations(self, writes: Sequence[t.AllocationWrite]) -> None:
        # A provider race (ProviderRaced) is retried by _retried, as
        # Placement does server-side; a consumer generation conflict must
        # reach the caller, who has to re-read and decide.
        writes = validation.allocation_writes(writes)
        with translated():
            alloc.write(self.engine, writes)

    def delete_allocations(self, consumer_uuid: str) -> None:
        consumer_uuid = validation.normalize_uuid(consumer_uuid, "consumer uuid")
        with translated(), self._write() as conn:
            alloc.delete_consumer(conn, consumer_uuid, "deleted by operator")

    # -- usages and candidates -------------------------------------------
    def get_provider_usages(self, uuid: str) -> dict[str, int]:
        uuid = validation.normalize_uuid(uuid, "provider uuid")
        with translated(), self._read() as conn:
            row = queries.provider_row(conn, uuid)
            invs = queries.inventories_of(conn, [row.id]).get(row.id, {})
            used = queries.usages_of(conn, [row.id])
        return {rc: used.get((row.id, rc), 0) for rc in sorted(invs)}

    def get_project_usages(self, project_id: str, user_id: str | None = None) -> dict[str, int]:
        validation.check_external_id(project_id, "project id")
        if user_id is not None:
            validation.check_external_id(user_id, "user id")
        a, c = m.allocations, m.consumers
        stmt = (
            sa.select(a.c.resource_class, sa.func.sum(a.c.used))
            .select_from(a.join(c, a.c.consumer_id == c.c.uuid))
            .where(c.c.project_id == project_id)
            .group_by(a.c.resource_class)
        )
        if user_id is not None:
            stmt = stmt.where(c.c.user_id == user_id)
        with translated(), self._read() as conn:
            return {rc: int(used) for rc, used in conn.execute(stmt)}

    def get_allocation_candidates(self, query: t.CandidateQuery) -> t.AllocationCandidates:
        query = validation.candidate_query(query)
        with translated(), self._read() as conn:
            return candidates.find(conn, query)


def _worth_retrying(exc: BaseException) -> bool:
    if isinstance(exc, ProviderRaced):
        return True
    return isinstance(exc, errors.BackendUnavailable) and is_transient(exc.__cause__)


def _unreachable(exc: BaseException) -> bool:
    return isinstance(exc, errors.BackendUnavailable) and is_connection_lost(exc.__cause__)


def _retried(method):
    """Run ``method`` (one transaction) again after a lost race or a lost
    connection, through the one retry layer."""
    @functools.wraps(method)
    def call(self, *args, **kwargs):
        return retry.call(lambda: method(self, *args, **kwargs), self.backoff,
                          lambda: _describe(method.__name__, args), _worth_retrying,
                          _unreachable)
    return call


def _describe(name: str, args: tuple) -> str:
    if name == "write_allocations" and args:
        return f"allocation write of consumer(s) {', '.join(w.consumer_uuid for w in args[0])}"
    return f"{name}({', '.join(repr(a) for a in args)[:200]})"


# Every public call is one transaction: each one is retried as a whole.
for _name, _method in list(vars(SQLBackend).items()):
    if inspect.isfunction(_method) and not _name.startswith("_") and _name != "close":
        setattr(SQLBackend, _name, _retried(_method))
