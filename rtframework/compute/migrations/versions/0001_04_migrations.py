"""Initial compute records schema, step: migrations.

Revision ID: 0001_04
Revises: 0001_03
Create Date: 2026-12-02
"""

import sqlalchemy as sa

from rtframework.compute.migrations.columns import TIMESTAMP
from rtframework.migration_ops import create_index, create_table

revision = "0001_04"
down_revision = "0001_03"
branch_labels = None
depends_on = None


def upgrade() -> None:
    create_table(
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
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.Column("updated_at", TIMESTAMP, nullable=False),
    )
    create_index("migrations_instance_uuid_idx", "migrations", ["instance_uuid"])
    create_index("migrations_status_idx", "migrations", ["status"])
