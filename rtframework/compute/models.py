"""Tables of the compute records (SQLAlchemy Core).

The alembic migrations in ``migrations/versions`` create exactly these; a
change here needs a new migration.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.dialects import mysql

metadata = sa.MetaData()

# Microsecond precision on MySQL too (its DATETIME drops fractions by
# default), so heartbeats and update order compare the same on every engine.
Timestamp = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb")

UUID = sa.String(36)
NAME = sa.String(255)

compute_nodes = sa.Table(
    "compute_nodes",
    metadata,
    # The node's root resource provider uuid.
    sa.Column("uuid", UUID, primary_key=True),
    sa.Column("host", NAME, nullable=False),
    sa.Column("nodename", NAME, nullable=False),
    sa.Column("driver", NAME, nullable=False),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Column("updated_at", Timestamp, nullable=False),
    sa.UniqueConstraint("host", "nodename", name="uniq_compute_nodes0host0nodename"),
)

services = sa.Table(
    "services",
    metadata,
    sa.Column("host", NAME, primary_key=True),
    sa.Column("last_seen", Timestamp, nullable=False),
    sa.Column("forced_down", sa.Boolean, nullable=False, default=False),
    # An operator took the host out of scheduling (rtf compute-services set).
    sa.Column("disabled", sa.Boolean, nullable=False, default=False,
              server_default=sa.false()),
    sa.Column("disabled_reason", sa.String(255), nullable=True),
    sa.Column("created_at", Timestamp, nullable=False),
)

instances = sa.Table(
    "instances",
    metadata,
    sa.Column("uuid", UUID, primary_key=True),
    sa.Column("name", NAME, nullable=False),
    sa.Column("project_id", NAME, nullable=False),
    sa.Column("user_id", NAME, nullable=False),
    sa.Column("flavor_name", NAME, nullable=False),
    sa.Column("flavor_resources", sa.JSON, nullable=False),
    sa.Column("host", NAME, nullable=True),
    sa.Column("node", NAME, nullable=True),
    sa.Column("vm_state", sa.String(32), nullable=False),
    sa.Column("task_state", sa.String(64), nullable=True),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Column("updated_at", Timestamp, nullable=False),
    sa.Index("instances_host_idx", "host"),
)

migrations = sa.Table(
    "migrations",
    metadata,
    sa.Column("uuid", UUID, primary_key=True),
    sa.Column("instance_uuid", UUID, nullable=False),
    sa.Column("source_host", NAME, nullable=True),
    sa.Column("source_node", NAME, nullable=True),
    sa.Column("dest_host", NAME, nullable=True),
    sa.Column("dest_node", NAME, nullable=True),
    sa.Column("migration_type", sa.String(32), nullable=False),
    sa.Column("status", sa.String(32), nullable=False),
    # {"name": ..., "resources": {class: amount}}
    sa.Column("old_flavor", sa.JSON, nullable=False),
    sa.Column("new_flavor", sa.JSON, nullable=False),
    sa.Column("claim_strategy", sa.String(32), nullable=False),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Column("updated_at", Timestamp, nullable=False),
    # What the move's claim holds, provider uuid -> class -> amount: the
    # instance's allocations when the move began, and the chosen
    # candidate's allocation request (null until one is chosen, and on
    # records older than revision 0003).
    sa.Column("source_allocations", sa.JSON, nullable=True),
    sa.Column("dest_allocations", sa.JSON, nullable=True),
    sa.Index("migrations_instance_uuid_idx", "instance_uuid"),
    sa.Index("migrations_status_idx", "status"),
)

audit_findings = sa.Table(
    "audit_findings",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("consumer_uuid", UUID, nullable=False),
    sa.Column("host", NAME, nullable=False),
    sa.Column("kind", sa.String(64), nullable=False),
    sa.Column("detail", sa.Text, nullable=False),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Index("audit_findings_consumer_idx", "consumer_uuid"),
)

# One row per (consumer, provider) whose allocations changed; before and
# after are {resource class: amount} on that provider.
allocation_history = sa.Table(
    "allocation_history",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("consumer_uuid", UUID, nullable=False),
    sa.Column("provider_uuid", UUID, nullable=False),
    sa.Column("before", sa.JSON, nullable=False),
    sa.Column("after", sa.JSON, nullable=False),
    sa.Column("who", NAME, nullable=False),
    sa.Column("why", sa.Text, nullable=False),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Index("allocation_history_consumer_idx", "consumer_uuid"),
)
