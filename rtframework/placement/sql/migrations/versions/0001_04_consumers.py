"""Initial placement schema, step: consumers.

Revision ID: 0001_04
Revises: 0001_03
Create Date: 2026-12-02
"""

import sqlalchemy as sa

from rtframework.migration_ops import create_index, create_table
from rtframework.placement.sql.migrations.columns import UUID

revision = "0001_04"
down_revision = "0001_03"
branch_labels = None
depends_on = None


def upgrade() -> None:
    create_table(
        "consumers",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("uuid", UUID, nullable=False),
        sa.Column("project_id", sa.String(255), nullable=False),
        sa.Column("user_id", sa.String(255), nullable=False),
        sa.Column("generation", sa.Integer, nullable=False),
        sa.Column("consumer_type", sa.String(255), nullable=True),
        sa.UniqueConstraint("uuid", name="uq_consumers_uuid"),
    )
    create_index("ix_consumers_project_id", "consumers", ["project_id"])
