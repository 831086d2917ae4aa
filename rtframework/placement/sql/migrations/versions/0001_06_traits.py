"""Initial placement schema, step: traits.

Revision ID: 0001_06
Revises: 0001_05
Create Date: 2026-12-02
"""

import sqlalchemy as sa

from rtframework.migration_ops import create_table
from rtframework.placement.sql.migrations.columns import NAME

revision = "0001_06"
down_revision = "0001_05"
branch_labels = None
depends_on = None


def upgrade() -> None:
    create_table(
        "traits",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("name", NAME, nullable=False),
        sa.UniqueConstraint("name", name="uq_traits_name"),
    )
