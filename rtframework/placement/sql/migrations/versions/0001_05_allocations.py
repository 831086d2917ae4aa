"""Initial placement schema, step: allocations.

Revision ID: 0001_05
Revises: 0001_04
Create Date: 2026-12-02
"""

import sqlalchemy as sa

from rtframework.migration_ops import create_index, create_table
from rtframework.placement.sql.migrations.columns import NAME, UUID, provider_fk

revision = "0001_05"
down_revision = "0001_04"
branch_labels = None
depends_on = None


def upgrade() -> None:
    create_table(
        "allocations",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        provider_fk("allocations", nullable=False),
        sa.Column("consumer_id", UUID, nullable=False),
        sa.Column("resource_class", NAME, nullable=False),
        sa.Column("used", sa.Integer, nullable=False),
    )
    create_index("ix_allocations_consumer_id", "allocations", ["consumer_id"])
    create_index("ix_allocations_provider_class", "allocations",
                 ["resource_provider_id", "resource_class"])
