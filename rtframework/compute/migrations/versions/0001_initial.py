"""Compute records: compute nodes, services, instances, migrations, audit findings.

Revision ID: 0001
Revises:
Create Date: 2026-12-02
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

_TS = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), "mysql")


def upgrade() -> None:
    op.create_table(
        "compute_nodes",
        sa.Column("uuid", sa.String(36), primary_key=True),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("nodename", sa.String(255), nullable=False),
        sa.Column("driver", sa.String(255), nullable=False),
        sa.Column("created_at", _TS, nullable=False),
        sa.Column("updated_at", _TS, nullable=False),
        sa.UniqueConstraint("host", "nodename", name="uniq_compute_nodes0host0nodename"),
    )
    op.create_table(
        "services",
        sa.Column("host", sa.String(255), primary_key=True),
        sa.Column("last_seen", _TS, nullable=False),
        sa.Column("forced_down", sa.Boolean, nullable=False),
        sa.Column("created_at", _TS, nullable=False),
    )
    op.create_table(
        "instances",
        sa.Column("uuid", sa.String(36), primary_key=True),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("project_id", sa.String(255), nullable=False),
        sa.Column("user_id", sa.String(255), nullable=False),
        sa.Column("flavor_name", sa.String(255), nullable=False),
        sa.Column("flavor_resources", sa.JSON, nullable=False),
        sa.Column("host", sa.String(255), nullable=True),
        sa.Column("node", sa.String(255), nullable=True),
        sa.Column("vm_state", sa.String(32), nullable=False),
        sa.Column("task_state", sa.String(64), nullable=True),
        sa.Column("created_at", _TS, nullable=False),
        sa.Column("updated_at", _TS, nullable=False),
    )
    op.create_index("instances_host_idx", "instances", ["host"])
    op.create_table(
        "migrations",
        sa.Column("uuid", sa.String(36), primary_key=True),
        sa.Column("instance_uuid", sa.String(36), nullable=False),
        sa.Column("source_host", sa.String(255), nullable=True),
        sa.Column("source_node", sa.String(255), nullable=True),
        sa.Column("dest_host", sa.String(255), nullable=True),
        sa.Column("dest_node", sa.String(255), nullable=True),
        sa.Column("migration_type", sa.String(32), nullable=False),
        sa.Column("status", sa.String(32), nullable=False),
        sa.Column("old_flavor", sa.JSON, nullable=False),
        sa.Column("new_flavor", sa.JSON, nullable=False),
        sa.Column("claim_strategy", sa.String(32), nullable=False),
        sa.Column("created_at", _TS, nullable=False),
        sa.Column("updated_at", _TS, nullable=False),
    )
    op.create_index("migrations_instance_uuid_idx", "migrations", ["instance_uuid"])
    op.create_index("migrations_status_idx", "migrations", ["status"])
    op.create_table(
        "audit_findings",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("consumer_uuid", sa.String(36), nullable=False),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("kind", sa.String(64), nullable=False),
        sa.Column("detail", sa.Text, nullable=False),
        sa.Column("created_at", _TS, nullable=False),
    )
    op.create_index("audit_findings_consumer_idx", "audit_findings", ["consumer_uuid"])


def downgrade() -> None:
    for table in ("audit_findings", "migrations", "instances", "services", "compute_nodes"):
        op.drop_table(table)
