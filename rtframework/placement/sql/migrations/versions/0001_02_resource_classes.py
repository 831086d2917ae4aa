"""Initial placement schema, step: resource_classes.

Revision ID: 0001_02
Revises: 0001_01
Create Date: 2026-12-02
"""

import sqlalchemy as sa

from rtframework.migration_ops import create_table
from rtframework.placement.sql.migrations.columns import NAME

revision = "0001_02"
down_revision = "0001_01"
branch_labels = None
depends_on = None


def upgrade() -> None:
    create_table(
        "resource_classes",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("name", NAME, nullable=False),
        sa.UniqueConstraint("name", name="uq_resource_classes_name"),
    )
