"""Initial placement schema, step: provider_aggregates.

The last step of the initial schema keeps the id 0001: databases
created before the schema was built in steps are stamped 0001 and
hold exactly what the steps build.

Revision ID: 0001
Revises: 0001_08
Create Date: 2026-12-02
"""

import sqlalchemy as sa

from rtframework.migration_ops import create_index, create_table
from rtframework.placement.sql.migrations.columns import provider_fk

revision = "0001"
down_revision = "0001_08"
branch_labels = None
depends_on = None


def upgrade() -> None:
    create_table(
        "provider_aggregates",
        provider_fk("provider_aggregates", primary_key=True),
        sa.Column("aggregate_id", sa.Integer,
                  sa.ForeignKey("placement_aggregates.id",
                                name="fk_provider_aggregates_aggregate_id_placement_aggregates"),
                  primary_key=True),
    )
    create_index("ix_provider_aggregates_aggregate_id", "provider_aggregates",
                 ["aggregate_id"])
