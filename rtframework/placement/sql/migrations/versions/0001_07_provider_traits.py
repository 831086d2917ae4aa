"""Initial placement schema, step: provider_traits.

Revision ID: 0001_07
Revises: 0001_06
Create Date: 2026-12-02
"""

import sqlalchemy as sa

from rtframework.migration_ops import create_index, create_table
from rtframework.placement.sql.migrations.columns import NAME, provider_fk

revision = "0001_07"
down_revision = "0001_06"
branch_labels = None
depends_on = None


def upgrade() -> None:
    create_table(
        "provider_traits",
        provider_fk("provider_traits", primary_key=True),
        sa.Column("trait", NAME, primary_key=True),
    )
    create_index("ix_provider_traits_trait", "provider_traits", ["trait"])
