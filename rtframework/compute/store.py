"""ComputeStore: the instance, migration, compute-node and service records.

Hosts that share a cloud share this store (PostgreSQL or MySQL; the
embedded SQLite default serves one machine). Writes are small explicit
methods; ``update_instance`` and ``update_migration`` take ``expected_*``
values and change the row only if it still holds them, so two hosts can
never both act on the same instance.

Longer than most modules on purpose: it is the one place that opens the
compute database's sessions, so every record table's reads and writes sit
in this one class.
"""

from __future__ import annotations

import datetime
import logging
import os
import uuid as uuidlib
from collections.abc import Collection, Iterable, Mapping
from typing import Any

import sqlalchemy as sa
from oslo_config import cfg

from rtframework import db
from rtframework.compute import errors, models
from rtframework.compute import values as v
from rtframework.compute.values import (
    AllocationChange,
    AuditFinding,
    ComputeNode,
    Flavor,
    HostRecords,
    Instance,
    InstanceState,
    Migration,
    Service,
)

LOG = logging.getLogger(__name__)

SCRIPT_LOCATION = os.path.join(os.path.dirname(__file__), "migrations")
VERSION_TABLE = "compute_alembic_version"

# "No expectation" for compare-and-swap arguments (None is a real value).
ANY: Any = object()

_INSTANCE_FIELDS = frozenset({
    "name", "project_id", "user_id", "flavor", "host", "node", "vm_state", "task_state",
})
_MIGRATION_FIELDS = frozenset({
    "status", "source_host", "source_node", "dest_host", "dest_node",
    "old_flavor", "new_flavor", "claim_strategy", "migration_type",
    "source_allocations", "dest_allocations",
})


def utcnow() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


def _to_db(moment: datetime.datetime) -> datetime.datetime:
    """Naive UTC: the one form every engine stores and compares alike."""
    if moment.tzinfo is not None:
        moment = moment.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    return moment


def _from_db(moment: datetime.datetime) -> datetime.datetime:
    return moment.replace(tzinfo=datetime.timezone.utc) if moment.tzinfo is None else moment


def sync_schema(conf: cfg.ConfigOpts) -> str | None:
    """Upgrade the compute records schema to the newest revision; returns it."""
    engine = db.engine_for(conf, "database")
    try:
        with db.opening(conf, "database"):
            db.upgrade(SCRIPT_LOCATION, engine, VERSION_TABLE)
            return db.current_revision(SCRIPT_LOCATION, engine, VERSION_TABLE)
    finally:
        engine.dispose()


def _matches(column: sa.ColumnElement, expected: Any) -> sa.ColumnElement[bool]:
    """``column`` equals ``expected``, or is one of a collection of values
    (None allowed in both)."""
    if isinstance(expected, (set, frozenset, tuple, list)):
        wanted = [e for e in expected if e is not None]
        clauses = [column.in_(wanted)] if wanted else []
        if None in expected:
            clauses.append(column.is_(None))
        return sa.or_(*clauses) if clauses else sa.false()
    return column.is_(None) if expected is None else column == expected


def _check_choice(what: str, value: str | None, choices: Collection[str]) -> None:
    if value is not None and value not in choices:
        raise errors.InvalidValue(f"{what} {value!r} is not one of {', '.join(choices)}")


class ComputeStore:
    """The compute records over one SQLAlchemy engine."""

    def __init__(self, engine: sa.Engine) -> None:
        self.engine = engine

    @classmethod
    def from_conf(cls, conf: cfg.ConfigOpts) -> ComputeStore:
        """Open ``[database]``; upgrade the schema first when auto_sync is on."""
        engine = db.engine_for(conf, "database")
        try:
            with db.opening(conf, "database"):
                cls._open(conf, engine)
        except Exception:
            engine.dispose()
            raise
        return cls(engine)

    @staticmethod
    def _open(conf: cfg.ConfigOpts, engine: sa.Engine) -> None:
        if conf.database.auto_sync:
            db.upgrade(SCRIPT_LOCATION, engine, VERSION_TABLE)
        else:
            db.require_current(SCRIPT_LOCATION, engine, VERSION_TABLE, "compute records")

    def close(self) -> None:
        self.engine.dispose()

    def _one(self, key: sa.Column, value: str, not_found: type[errors.NotFound],
             message: str) -> Mapping[str, Any]:
        """The row of ``key.table`` whose ``key`` is ``value``."""
        with db.read(self.engine) as conn:
            row = conn.execute(sa.select(key.table).where(key == value)).mappings().first()
        if row is None:
            raise not_found(message)
        return row

    # -- instances ---------------------------------------------------------
    def create_instance(
        self,
        name: str,
        flavor: Flavor,
        *,
        project_id: str,
        user_id: str,
        host: str | None = None,
        node: str | None = None,
        vm_state: str = v.BUILDING,
        task_state: str | None = None,
        uuid: str | None = None,
    ) -> Instance:
        _check_choice("vm_state", vm_state, v.VM_STATES)
        now = _to_db(utcnow())
        row = {
            "uuid": uuid or str(uuidlib.uuid4()),
            "name": name,
            "project_id": project_id,
            "user_id": user_id,
            "flavor_name": flavor.name,
            "flavor_resources": dict(flavor.resources),
            "host": host,
            "node": node,
            "vm_state": vm_state,
            "task_state": task_state,
            "created_at": now,
            "updated_at": now,
        }
        with db.transaction(self.engine) as conn:
            conn.execute(models.instances.insert().values(**row))
        return _instance(row)

    def get_instance(self, uuid: str) -> Instance:
        return _instance(self._one(models.instances.c.uuid, uuid, errors.InstanceNotFound,
                                   f"instance {uuid} not found"))

    def lookup_instance(self, ref: str) -> Instance:
        """An instance by uuid, or by name when exactly one has it."""
        table = models.instances
        with db.read(self.engine) as conn:
            rows = conn.execute(
                sa.select(table).where(sa.or_(table.c.uuid == ref, table.c.name == ref))
            ).mappings().all()
        by_uuid = [r for r in rows if r["uuid"] == ref]
        if by_uuid:
            return _instance(by_uuid[0])
        live = [r for r in rows if r["vm_state"] != v.DELETED] or rows
        if not live:
            raise errors.InstanceNotFound(f"no instance with uuid or name {ref!r}")
        if len(live) > 1:
            raise errors.AmbiguousInstance(
                f"{len(live)} instances are named {ref!r}; use a uuid: "
                + ", ".join(r["uuid"] for r in live)
            )
        return _instance(live[0])

    def purge_instance(self, uuid: str) -> None:
        """Forget an instance record entirely: only for a boot that never
        claimed anything (instances that existed are marked DELETED)."""
        with db.transaction(self.engine) as conn:
            conn.execute(models.instances.delete().where(models.instances.c.uuid == uuid))

    def instance_flavor(self, uuid: str) -> Flavor:
        """The flavor an instance currently claims."""
        return self.get_instance(uuid).flavor

    def list_instances(
        self,
        *,
        host: str | None = None,
        node: str | None = None,
        vm_states: Iterable[str] | None = None,
        uuids: Iterable[str] | None = None,
    ) -> list[Instance]:
        table = models.instances
        query = _filtered(
            sa.select(table).order_by(table.c.created_at, table.c.uuid),
            equal={table.c.host: host, table.c.node: node},
            among={table.c.vm_state: vm_states, table.c.uuid: uuids})
        with db.read(self.engine) as conn:
            return [_instance(r) for r in conn.execute(query).mappings()]

    def instance_uuids(self, *, host: str, vm_state_not: str | None = None) -> list[str]:
        """uuids of the instances on ``host`` (not in ``vm_state_not``):
        list_instances without building a record per row."""
        table = models.instances
        query = sa.select(table.c.uuid).where(table.c.host == host)
        if vm_state_not is not None:
            query = query.where(table.c.vm_state != vm_state_not)
        with db.read(self.engine) as conn:
            return list(conn.execute(query).scalars())

    def update_instance(
        self,
        uuid: str,
        *,
        expected_vm_state: Any = ANY,
        expected_task_state: Any = ANY,
        expected_host: Any = ANY,
        **fields: Any,
    ) -> Instance:
        """Change ``fields`` of an instance, if it still has the expected
        vm_state / task_state / host (each a value or a collection of
        values); StateConflict otherwise, naming what it found.

        Fields: name, project_id, user_id, flavor (a Flavor), host, node,
        vm_state, task_state.
        """
        unknown = set(fields) - _INSTANCE_FIELDS
        if unknown:
            raise errors.InvalidValue(f"instance has no field(s) {', '.join(sorted(unknown))}")
        _check_choice("vm_state", fields.get("vm_state"), v.VM_STATES)
        values = dict(fields)
        if "flavor" in values:
            flavor = values.pop("flavor")
            values["flavor_name"] = flavor.name
            values["flavor_resources"] = dict(flavor.resources)
        values["updated_at"] = _to_db(utcnow())
        expected = {"vm_state": expected_vm_state, "task_state": expected_task_state,
                    "host": expected_host}
        table = models.instances
        with db.transaction(self.engine) as conn:
            row = _compare_and_swap(conn, table, uuid, expected, values, "instance",
                                    errors.InstanceNotFound)
        return _instance(row)

    # -- migrations --------------------------------------------------------
    def create_migration(
        self,
        instance_uuid: str,
        migration_type: str,
        *,
        source_host: str | None,
        source_node: str | None,
        old_flavor: Flavor,
        new_flavor: Flavor | None = None,
        dest_host: str | None = None,
        dest_node: str | None = None,
        claim_strategy: str = "migration",
        status: str = "pre-migrating",
        uuid: str | None = None,
        source_allocations: Mapping[str, Mapping[str, int]] | None = None,
    ) -> Migration:
        _check_choice("migration_type", migration_type, v.MIGRATION_TYPES)
        _check_choice("migration status", status, v.MIGRATION_STATUSES)
        _check_choice("claim_strategy", claim_strategy, v.CLAIM_STRATEGIES)
        now = _to_db(utcnow())
        row = {
            "uuid": uuid or str(uuidlib.uuid4()),
            "instance_uuid": instance_uuid,
            "source_host": source_host,
            "source_node": source_node,
            "dest_host": dest_host,
            "dest_node": dest_node,
            "migration_type": migration_type,
            "status": status,
            "old_flavor": old_flavor.to_json(),
            "new_flavor": (new_flavor or old_flavor).to_json(),
            "claim_strategy": claim_strategy,
            "created_at": now,
            "updated_at": now,
            "source_allocations": _allocations_to_db(source_allocations),
        }
        with db.transaction(self.engine) as conn:
            conn.execute(models.migrations.insert().values(**row))
        return _migration(row)

    def get_migration(self, uuid: str) -> Migration:
        return _migration(self._one(models.migrations.c.uuid, uuid, errors.MigrationNotFound,
                                    f"migration {uuid} not found"))

    def list_migrations(
        self,
        *,
        instance_uuid: str | None = None,
        host: str | None = None,
        statuses: Iterable[str] | None = None,
        uuids: Iterable[str] | None = None,
        instance_uuids: Iterable[str] | None = None,
    ) -> list[Migration]:
        """Migrations, oldest first; ``host`` matches source or destination."""
        table = models.migrations
        query = _filtered(
            sa.select(table).order_by(table.c.created_at, table.c.uuid),
            equal={table.c.instance_uuid: instance_uuid},
            among={table.c.status: statuses, table.c.uuid: uuids,
                   table.c.instance_uuid: instance_uuids})
        if host is not None:
            query = query.where(sa.or_(table.c.source_host == host, table.c.dest_host == host))
        with db.read(self.engine) as conn:
            return [_migration(r) for r in conn.execute(query).mappings()]

    def update_migration(
        self, uuid: str, *, expected_status: Any = ANY, **fields: Any
    ) -> Migration:
        """Change ``fields`` of a migration if its status is still the
        expected one (a value or a collection); StateConflict otherwise."""
        unknown = set(fields) - _MIGRATION_FIELDS
        if unknown:
            raise errors.InvalidValue(f"migration has no field(s) {', '.join(sorted(unknown))}")
        _check_choice("migration status", fields.get("status"), v.MIGRATION_STATUSES)
        _check_choice("claim_strategy", fields.get("claim_strategy"), v.CLAIM_STRATEGIES)
        _check_choice("migration_type", fields.get("migration_type"), v.MIGRATION_TYPES)
        values = {
            k: (f.to_json() if isinstance(f, Flavor) else f) for k, f in fields.items()
        }
        for key in ("source_allocations", "dest_allocations"):
            if key in values:
                values[key] = _allocations_to_db(values[key])
        values["updated_at"] = _to_db(utcnow())
        with db.transaction(self.engine) as conn:
            row = _compare_and_swap(conn, models.migrations, uuid, {"status": expected_status},
                                    values, "migration", errors.MigrationNotFound)
        return _migration(row)

    # -- compute nodes -----------------------------------------------------
    def record_compute_node(self, uuid: str, host: str, nodename: str, driver: str) -> ComputeNode:
        """Create or refresh the record of a node this host reports."""
        now = _to_db(utcnow())
        with db.transaction(self.engine) as conn:
            _upsert(conn, models.compute_nodes, {"uuid": uuid},
                    {"host": host, "nodename": nodename, "driver": driver, "updated_at": now},
                    {"created_at": now})
            row = conn.execute(
                sa.select(models.compute_nodes).where(models.compute_nodes.c.uuid == uuid)
            ).mappings().one()
        return _compute_node(row)

    def list_compute_nodes(self, *, host: str | None = None) -> list[ComputeNode]:
        table = models.compute_nodes
        query = sa.select(table).order_by(table.c.host, table.c.nodename)
        if host is not None:
            query = query.where(table.c.host == host)
        with db.read(self.engine) as conn:
            return [_compute_node(r) for r in conn.execute(query).mappings()]

    def node_root_uuid(self, host: str, nodename: str) -> str:
        """Root resource provider uuid of node ``nodename`` of ``host``."""
        table = models.compute_nodes
        with db.read(self.engine) as conn:
            found = conn.execute(
                sa.select(table.c.uuid).where(table.c.host == host, table.c.nodename == nodename)
            ).scalar()
        if found is None:
            raise errors.ComputeNodeNotFound(f"host {host!r} reports no node {nodename!r}")
        return found

    def delete_compute_node(self, uuid: str) -> None:
        with db.transaction(self.engine) as conn:
            conn.execute(models.compute_nodes.delete().where(models.compute_nodes.c.uuid == uuid))

    # -- services (host heartbeats) ----------------------------------------
    def heartbeat(self, host: str, at: datetime.datetime | None = None) -> Service:
        """Record that ``host``'s agent is alive (now, or ``at``)."""
        with db.transaction(self.engine) as conn:
            return self._heartbeat(conn, host, at)

    def heartbeat_and_records(self, host: str, nodes: Mapping[str, str] | None = None,
                              driver: str = "") -> HostRecords:
        """The heartbeat of one periodic pass, the records of the nodes it
        reports (``nodes``: name -> root provider uuid, recorded as
        :meth:`record_compute_node` does) and the records the pass reads,
        in one transaction (one connection checkout, one commit): the
        host's service, the instances recorded on it (owner and states
        only), the unfinished migrations and the host's compute nodes."""
        instances, migrations = models.instances, models.migrations
        with db.transaction(self.engine) as conn:
            service = self._heartbeat(conn, host, None)
            now = _to_db(utcnow())
            for nodename, uuid in (nodes or {}).items():
                _upsert(conn, models.compute_nodes, {"uuid": uuid},
                        {"host": host, "nodename": nodename, "driver": driver,
                         "updated_at": now}, {"created_at": now})
            states = {
                uuid: InstanceState(uuid, owner, vm_state, task_state)
                for uuid, owner, vm_state, task_state in conn.execute(
                    sa.select(instances.c.uuid, instances.c.host, instances.c.vm_state,
                              instances.c.task_state)
                    .where(instances.c.host == host))
            }
            moving = tuple(_migration(r) for r in conn.execute(
                sa.select(migrations)
                .where(migrations.c.status.in_(sorted(v.UNFINISHED_MIGRATION_STATUSES)))
                .order_by(migrations.c.created_at, migrations.c.uuid)).mappings())
            recorded = tuple(_compute_node(r) for r in conn.execute(
                sa.select(models.compute_nodes).where(models.compute_nodes.c.host == host)
                .order_by(models.compute_nodes.c.nodename)).mappings())
        return HostRecords(service, states, moving, recorded)

    @staticmethod
    def _heartbeat(conn: sa.Connection, host: str, at: datetime.datetime | None) -> Service:
        moment = _to_db(at or utcnow())
        table = models.services
        if conn.dialect.update_returning:
            # The refreshed row comes back with the UPDATE: no SELECT.
            row = conn.execute(
                table.update().where(table.c.host == host).values(last_seen=moment)
                .returning(*table.c)).mappings().first()
            if row is not None:
                return _service(row)
        _upsert(conn, table, {"host": host}, {"last_seen": moment},
                {"created_at": moment, "forced_down": False})
        row = conn.execute(
            sa.select(models.services).where(models.services.c.host == host)).mappings().one()
        return _service(row)

    def set_forced_down(self, host: str, forced_down: bool) -> Service:
        """Mark a host down (or up again) whatever its heartbeat says; an
        operator does this to allow evacuating a host that is fenced."""
        with db.transaction(self.engine) as conn:
            result = conn.execute(
                models.services.update().where(models.services.c.host == host)
                .values(forced_down=forced_down)
            )
        if result.rowcount == 0:
            raise errors.ServiceNotFound(f"no service for host {host!r}")
        return self.get_service(host)

    def set_disabled(self, host: str, disabled: bool, reason: str | None = None) -> Service:
        """Take a host out of scheduling (or back in); the reason is kept
        while it is disabled."""
        with db.transaction(self.engine) as conn:
            result = conn.execute(
                models.services.update().where(models.services.c.host == host)
                .values(disabled=disabled, disabled_reason=reason if disabled else None)
            )
        if result.rowcount == 0:
            raise errors.ServiceNotFound(f"no service for host {host!r}")
        return self.get_service(host)

    def unschedulable_hosts(self, down_after: float) -> set[str]:
        """Hosts the scheduler must not pick: disabled, forced down, or
        without a heartbeat for ``down_after`` seconds."""
        now = utcnow()
        return {s.host for s in self.list_services()
                if s.disabled or s.forced_down
                or (now - s.last_seen).total_seconds() > down_after}

    def get_service(self, host: str) -> Service:
        return _service(self._one(models.services.c.host, host, errors.ServiceNotFound,
                                  f"no service for host {host!r}"))

    def list_services(self) -> list[Service]:
        with db.read(self.engine) as conn:
            rows = conn.execute(sa.select(models.services).order_by(models.services.c.host))
            return [_service(r) for r in rows.mappings()]

    def is_host_up(
        self, host: str, down_after: float, now: datetime.datetime | None = None
    ) -> bool:
        """False if ``host`` is forced down, never reported, or last
        reported more than ``down_after`` seconds ago."""
        try:
            service = self.get_service(host)
        except errors.ServiceNotFound:
            return False
        if service.forced_down:
            return False
        age = (now or utcnow()) - service.last_seen
        return age.total_seconds() <= down_after

    # -- audit findings ----------------------------------------------------
    def add_audit_finding(self, consumer_uuid: str, host: str, kind: str, detail: str) -> None:
        with db.transaction(self.engine) as conn:
            conn.execute(models.audit_findings.insert().values(
                consumer_uuid=consumer_uuid, host=host, kind=kind, detail=detail,
                created_at=_to_db(utcnow()),
            ))

    def list_audit_findings(
        self, *, host: str | None = None, kind: str | None = None,
        consumer_uuid: str | None = None,
    ) -> list[AuditFinding]:
        table = models.audit_findings
        query = _filtered(sa.select(table).order_by(table.c.id), equal={
            table.c.host: host, table.c.kind: kind, table.c.consumer_uuid: consumer_uuid})
        with db.read(self.engine) as conn:
            return [
                AuditFinding(
                    id=r["id"], consumer_uuid=r["consumer_uuid"], host=r["host"],
                    kind=r["kind"], detail=r["detail"], created_at=_from_db(r["created_at"]),
                )
                for r in conn.execute(query).mappings()
            ]

    # -- allocation history ------------------------------------------------
    def add_allocation_changes(
        self, changes: Iterable[tuple[str, str, Mapping[str, int], Mapping[str, int]]],
        *, who: str, why: str,
    ) -> None:
        """Record (consumer, provider, before, after) rows in one transaction."""
        now = _to_db(utcnow())
        rows = [{"consumer_uuid": c, "provider_uuid": p, "before": dict(b), "after": dict(a),
                 "who": who[:255], "why": why, "created_at": now}
                for c, p, b, a in changes]
        if not rows:
            return
        with db.transaction(self.engine) as conn:
            conn.execute(models.allocation_history.insert(), rows)

    def list_allocation_history(
        self, *, consumer_uuid: str | None = None, provider_uuid: str | None = None,
    ) -> list[AllocationChange]:
        """Recorded allocation changes, oldest first."""
        table = models.allocation_history
        query = sa.select(table).order_by(table.c.id)
        if consumer_uuid is not None:
            query = query.where(table.c.consumer_uuid == consumer_uuid)
        if provider_uuid is not None:
            query = query.where(table.c.provider_uuid == provider_uuid)
        with db.read(self.engine) as conn:
            return [
                AllocationChange(
                    id=r["id"], consumer_uuid=r["consumer_uuid"],
                    provider_uuid=r["provider_uuid"],
                    before={k: int(n) for k, n in r["before"].items()},
                    after={k: int(n) for k, n in r["after"].items()},
                    who=r["who"], why=r["why"], created_at=_from_db(r["created_at"]),
                )
                for r in conn.execute(query).mappings()
            ]


# -- row helpers ---------------------------------------------------------------
def _filtered(
    query: sa.Select,
    equal: Mapping[sa.Column, Any] = {},  # noqa: B006 - read only
    among: Mapping[sa.Column, Iterable[Any] | None] = {},  # noqa: B006 - read only
) -> sa.Select:
    """``query`` restricted to the given values; None means "any"."""
    for column, wanted in equal.items():
        if wanted is not None:
            query = query.where(column == wanted)
    for column, values in among.items():
        if values is not None:
            query = query.where(column.in_(list(values)))
    return query


def _compare_and_swap(
    conn: sa.Connection,
    table: sa.Table,
    uuid: str,
    expected: Mapping[str, Any],
    values: Mapping[str, Any],
    what: str,
    not_found: type[errors.NotFound],
) -> Mapping[str, Any]:
    """UPDATE one row if it still holds ``expected``; return the new row."""
    conditions = [table.c.uuid == uuid]
    conditions += [_matches(table.c[k], e) for k, e in expected.items() if e is not ANY]
    result = conn.execute(table.update().where(*conditions).values(**values))
    row = conn.execute(sa.select(table).where(table.c.uuid == uuid)).mappings().first()
    if row is None:
        raise not_found(f"{what} {uuid} not found")
    if result.rowcount == 0:
        found = ", ".join(
            f"{k} expected {e!r} but is {row[k]!r}" for k, e in expected.items() if e is not ANY
        )
        raise errors.StateConflict(f"{what} {uuid} changed meanwhile: {found}")
    return row


def _upsert(
    conn: sa.Connection,
    table: sa.Table,
    key: Mapping[str, Any],
    values: Mapping[str, Any],
    insert_only: Mapping[str, Any],
) -> None:
    """Update the row with ``key`` or insert it; portable across engines."""
    where = [table.c[k] == val for k, val in key.items()]
    if conn.execute(table.update().where(*where).values(**values)).rowcount:
        return
    try:
        with conn.begin_nested():
            conn.execute(table.insert().values(**key, **values, **insert_only))
    except sa.exc.IntegrityError:
        # Another writer inserted it between our UPDATE and INSERT.
        conn.execute(table.update().where(*where).values(**values))


def _instance(row: Mapping[str, Any]) -> Instance:
    return Instance(
        uuid=row["uuid"],
        name=row["name"],
        project_id=row["project_id"],
        user_id=row["user_id"],
        flavor=Flavor(row["flavor_name"], {k: int(a) for k, a in row["flavor_resources"].items()}),
        host=row["host"],
        node=row["node"],
        vm_state=row["vm_state"],
        task_state=row["task_state"],
        created_at=_from_db(row["created_at"]),
        updated_at=_from_db(row["updated_at"]),
    )


def _migration(row: Mapping[str, Any]) -> Migration:
    return Migration(
        uuid=row["uuid"],
        instance_uuid=row["instance_uuid"],
        migration_type=row["migration_type"],
        status=row["status"],
        source_host=row["source_host"],
        source_node=row["source_node"],
        dest_host=row["dest_host"],
        dest_node=row["dest_node"],
        old_flavor=Flavor.from_json(row["old_flavor"]),
        new_flavor=Flavor.from_json(row["new_flavor"]),
        claim_strategy=row["claim_strategy"],
        created_at=_from_db(row["created_at"]),
        updated_at=_from_db(row["updated_at"]),
        source_allocations=_allocations_from_db(row.get("source_allocations")),
        dest_allocations=_allocations_from_db(row.get("dest_allocations")),
    )


def _allocations_to_db(allocations: Mapping[str, Mapping[str, int]] | None) -> dict | None:
    if allocations is None:
        return None
    return {provider: {rc: int(n) for rc, n in resources.items()}
            for provider, resources in allocations.items()}


def _allocations_from_db(data: Mapping | None) -> dict[str, dict[str, int]] | None:
    return None if data is None else _allocations_to_db(data)


def _compute_node(row: Mapping[str, Any]) -> ComputeNode:
    return ComputeNode(
        uuid=row["uuid"], host=row["host"], nodename=row["nodename"], driver=row["driver"],
        created_at=_from_db(row["created_at"]), updated_at=_from_db(row["updated_at"]),
    )


def _service(row: Mapping[str, Any]) -> Service:
    return Service(
        host=row["host"], last_seen=_from_db(row["last_seen"]),
        forced_down=bool(row["forced_down"]), created_at=_from_db(row["created_at"]),
        disabled=bool(row["disabled"]), disabled_reason=row["disabled_reason"],
    )
