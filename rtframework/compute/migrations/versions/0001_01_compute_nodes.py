"""Initial compute records schema, step: compute_nodes.

Revision ID: 0001_01
Revises:
Create Date: 2026-12-02
"""

import sqlalchemy as sa

from rtframework.compute.migrations.columns import TIMESTAMP
from rtframework.migration_ops import create_table

revision = "0001_01"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    create_table(
        "compute_nodes",
        sa.Column("uuid", sa.String(36), primary_key=True),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("nodename", sa.String(255), nullable=False),
        sa.Column("driver", sa.String(255), nullable=False),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.Column("updated_at", TIMESTAMP, nullable=False),
        sa.UniqueConstraint("host", "nodename", name="uniq_compute_nodes0host0nodename"),
    )
