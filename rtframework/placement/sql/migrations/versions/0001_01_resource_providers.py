"""Initial placement schema, step: resource_providers.

Revision ID: 0001_01
Revises:
Create Date: 2026-12-02
"""

import sqlalchemy as sa

from rtframework.migration_ops import create_index, create_table
from rtframework.placement.sql.migrations.columns import UUID, provider_fk

revision = "0001_01"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    create_table(
        "resource_providers",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("uuid", UUID, nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("generation", sa.Integer, nullable=False),
        provider_fk("resource_providers", "parent_provider_id", nullable=True),
        provider_fk("resource_providers", "root_provider_id", nullable=True),
        sa.UniqueConstraint("uuid", name="uq_resource_providers_uuid"),
        sa.UniqueConstraint("name", name="uq_resource_providers_name"),
    )
    create_index("ix_resource_providers_parent_provider_id", "resource_providers",
                 ["parent_provider_id"])
    create_index("ix_resource_providers_root_provider_id", "resource_providers",
                 ["root_provider_id"])
