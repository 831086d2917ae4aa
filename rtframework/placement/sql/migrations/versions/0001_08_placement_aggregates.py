"""Initial placement schema, step: placement_aggregates.

Revision ID: 0001_08
Revises: 0001_07
Create Date: 2026-12-02
"""

import sqlalchemy as sa

from rtframework.migration_ops import create_table
from rtframework.placement.sql.migrations.columns import UUID

revision = "0001_08"
down_revision = "0001_07"
branch_labels = None
depends_on = None


def upgrade() -> None:
    create_table(
        "placement_aggregates",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("uuid", UUID, nullable=False),
        sa.UniqueConstraint("uuid", name="uq_placement_aggregates_uuid"),
    )
