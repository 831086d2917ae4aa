"""Initial placement schema, step: inventories.

Revision ID: 0001_03
Revises: 0001_02
Create Date: 2026-12-02
"""

import sqlalchemy as sa

from rtframework.migration_ops import create_table
from rtframework.placement.sql.migrations.columns import NAME, provider_fk

revision = "0001_03"
down_revision = "0001_02"
branch_labels = None
depends_on = None


def upgrade() -> None:
    create_table(
        "inventories",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        provider_fk("inventories", nullable=False),
        sa.Column("resource_class", NAME, nullable=False),
        sa.Column("total", sa.Integer, nullable=False),
        sa.Column("reserved", sa.Integer, nullable=False),
        sa.Column("min_unit", sa.Integer, nullable=False),
        sa.Column("max_unit", sa.Integer, nullable=False),
        sa.Column("step_size", sa.Integer, nullable=False),
        sa.Column("allocation_ratio", sa.Float, nullable=False),
        sa.UniqueConstraint("resource_provider_id", "resource_class",
                            name="uq_inventories_resource_provider_id_resource_class"),
    )
