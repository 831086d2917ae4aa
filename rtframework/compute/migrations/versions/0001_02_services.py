"""Initial compute records schema, step: services.

Revision ID: 0001_02
Revises: 0001_01
Create Date: 2026-12-02
"""

import sqlalchemy as sa

from rtframework.compute.migrations.columns import TIMESTAMP
from rtframework.migration_ops import create_table

revision = "0001_02"
down_revision = "0001_01"
branch_labels = None
depends_on = None


def upgrade() -> None:
    create_table(
        "services",
        sa.Column("host", sa.String(255), primary_key=True),
        sa.Column("last_seen", TIMESTAMP, nullable=False),
        sa.Column("forced_down", sa.Boolean, nullable=False),
        sa.Column("created_at", TIMESTAMP, nullable=False),
    )
