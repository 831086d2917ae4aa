"""Migration records: create, read, list, compare-and-swap update.

(Not ``migrations``: that is the alembic folder of the compute schema.)
"""

from __future__ import annotations

import uuid as uuidlib
from collections.abc import Iterable, Mapping
from typing import Any

import sqlalchemy as sa

from rtframework.compute import errors, models, records
from rtframework.compute import values as v
from rtframework.compute.values import Flavor, Migration

_FIELDS = frozenset({
    "status", "source_host", "source_node", "dest_host", "dest_node",
    "old_flavor", "new_flavor", "claim_strategy", "migration_type",
    "source_allocations", "dest_allocations",
})
_ALLOCATIONS = ("source_allocations", "dest_allocations")


class MigrationRecords(records.Records):

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
        _check_choices(migration_type=migration_type, status=status,
                       claim_strategy=claim_strategy)
        now = records.now()
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
            "source_allocations": _allocations(source_allocations),
        }
        self._insert(models.migrations, row)
        return migration_of(row)

    def get_migration(self, uuid: str) -> Migration:
        return migration_of(self._one(models.migrations.c.uuid, uuid, errors.MigrationNotFound,
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
        return self._all(select_migrations(
            instance_uuid=instance_uuid, host=host, statuses=statuses, uuids=uuids,
            instance_uuids=instance_uuids), migration_of)

    def update_migration(
        self, uuid: str, *, expected_status: Any = records.ANY, **fields: Any
    ) -> Migration:
        """Change ``fields`` of a migration if its status is still the
        expected one (a value or a collection); StateConflict otherwise."""
        records.check_fields("migration", fields, _FIELDS)
        _check_choices(migration_type=fields.get("migration_type"),
                       status=fields.get("status"),
                       claim_strategy=fields.get("claim_strategy"))
        values = {
            k: (f.to_json() if isinstance(f, Flavor) else _allocations(f) if k in _ALLOCATIONS
                else f)
            for k, f in fields.items()
        }
        return migration_of(self._compare_and_swap(
            models.migrations, uuid, {"status": expected_status}, values, "migration",
            errors.MigrationNotFound))


def _check_choices(*, migration_type: str | None, status: str | None,
                   claim_strategy: str | None) -> None:
    records.check_choice("migration_type", migration_type, v.MIGRATION_TYPES)
    records.check_choice("migration status", status, v.MIGRATION_STATUSES)
    records.check_choice("claim_strategy", claim_strategy, v.CLAIM_STRATEGIES)


def _allocations(allocations: Mapping[str, Mapping[str, int]] | None) -> dict | None:
    """provider -> class -> amount, as stored and as read (None: not kept)."""
    if allocations is None:
        return None
    return {provider: {rc: int(n) for rc, n in resources.items()}
            for provider, resources in allocations.items()}


def select_migrations(
    *,
    instance_uuid: str | None = None,
    host: str | None = None,
    statuses: Iterable[str] | None = None,
    uuids: Iterable[str] | None = None,
    instance_uuids: Iterable[str] | None = None,
) -> sa.Select:
    """The query of :meth:`MigrationRecords.list_migrations`, for callers
    that read on a connection of their own."""
    table = models.migrations
    query = records.filtered(
        sa.select(table).order_by(table.c.created_at, table.c.uuid),
        equal={table.c.instance_uuid: instance_uuid},
        among={table.c.status: statuses, table.c.uuid: uuids,
               table.c.instance_uuid: instance_uuids})
    if host is not None:
        query = query.where(sa.or_(table.c.source_host == host, table.c.dest_host == host))
    return query


def migration_of(row: Mapping[str, Any]) -> Migration:
    return records.value(
        Migration, row,
        old_flavor=Flavor.from_json(row["old_flavor"]),
        new_flavor=Flavor.from_json(row["new_flavor"]),
        **{key: _allocations(row.get(key)) for key in _ALLOCATIONS})
