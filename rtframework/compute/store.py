"""ComputeStore: the instance, migration, compute-node and service records.

Hosts that share a cloud share this store (PostgreSQL or MySQL; the
embedded SQLite default serves one machine). Writes are small explicit
methods; ``update_instance`` and ``update_migration`` take ``expected_*``
values and change the row only if it still holds them, so two hosts can
never both act on the same instance.

The class is a composition: each record table's reads and writes sit in
its own module (``instances``, ``migration_records``, ``nodes``,
``services``, ``audit_findings``, ``allocation_history``; ``host_pass``
for what one periodic pass reads and writes across them) over the shared
row helpers of ``records``; this module opens the database and keeps its
schema current.
"""

from __future__ import annotations

import os

import sqlalchemy as sa
from oslo_config import cfg

from rtframework import db
from rtframework.compute.allocation_history import AllocationHistoryRecords
from rtframework.compute.audit_findings import AuditFindingRecords
from rtframework.compute.host_pass import HostPassRecords
from rtframework.compute.instances import InstanceRecords
from rtframework.compute.migration_records import MigrationRecords
from rtframework.compute.nodes import ComputeNodeRecords
from rtframework.compute.records import ANY, utcnow
from rtframework.compute.services import ServiceRecords

__all__ = ["ANY", "ComputeStore", "SCRIPT_LOCATION", "VERSION_TABLE", "sync_schema", "utcnow"]

SCRIPT_LOCATION = os.path.join(os.path.dirname(__file__), "migrations")
VERSION_TABLE = "compute_alembic_version"


def sync_schema(conf: cfg.ConfigOpts) -> tuple[str | None, str | None]:
    """Upgrade the compute records schema to the newest revision; returns
    the revisions before and after."""
    engine = db.engine_for(conf, "database")
    try:
        with db.opening(conf, "database"):
            return db.upgrade(SCRIPT_LOCATION, engine, VERSION_TABLE)
    finally:
        engine.dispose()


class ComputeStore(InstanceRecords, MigrationRecords, ComputeNodeRecords, ServiceRecords,
                   HostPassRecords, AuditFindingRecords, AllocationHistoryRecords):
    """The compute records over one SQLAlchemy engine."""

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
