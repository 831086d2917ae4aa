"""Initial placement schema.

Revision ID: 0001
Revises:
Create Date: 2026-12-02
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

NAME = sa.String(255)
UUID = sa.String(36)


def _provider_fk(table: str, column: str = "resource_provider_id", **kwargs) -> sa.Column:
    # Named as models.metadata's naming convention names them.
    fk = sa.ForeignKey("resource_providers.id", name=f"fk_{table}_{column}_resource_providers")
    return sa.Column(column, sa.Integer, fk, **kwargs)


def upgrade() -> None:
    op.create_table(
        "resource_providers",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("uuid", UUID, nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("generation", sa.Integer, nullable=False),
        _provider_fk("resource_providers", "parent_provider_id", nullable=True),
        _provider_fk("resource_providers", "root_provider_id", nullable=True),
        sa.UniqueConstraint("uuid", name="uq_resource_providers_uuid"),
        sa.UniqueConstraint("name", name="uq_resource_providers_name"),
    )
    op.create_index("ix_resource_providers_parent_provider_id", "resource_providers",
                    ["parent_provider_id"])
    op.create_index("ix_resource_providers_root_provider_id", "resource_providers",
                    ["root_provider_id"])
    op.create_table(
        "resource_classes",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("name", NAME, nullable=False),
        sa.UniqueConstraint("name", name="uq_resource_classes_name"),
    )
    op.create_table(
        "inventories",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        _provider_fk("inventories", nullable=False),
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
    op.create_table(
        "consumers",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("uuid", UUID, nullable=False),
        sa.Column("project_id", sa.String(255), nullable=False),
        sa.Column("user_id", sa.String(255), nullable=False),
        sa.Column("generation", sa.Integer, nullable=False),
        sa.Column("consumer_type", sa.String(255), nullable=True),
        sa.UniqueConstraint("uuid", name="uq_consumers_uuid"),
    )
    op.create_index("ix_consumers_project_id", "consumers", ["project_id"])
    op.create_table(
        "allocations",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        _provider_fk("allocations", nullable=False),
        sa.Column("consumer_id", UUID, nullable=False),
        sa.Column("resource_class", NAME, nullable=False),
        sa.Column("used", sa.Integer, nullable=False),
    )
    op.create_index("ix_allocations_consumer_id", "allocations", ["consumer_id"])
    op.create_index("ix_allocations_provider_class", "allocations",
                    ["resource_provider_id", "resource_class"])
    op.create_table(
        "traits",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("name", NAME, nullable=False),
        sa.UniqueConstraint("name", name="uq_traits_name"),
    )
    op.create_table(
        "provider_traits",
        _provider_fk("provider_traits", primary_key=True),
        sa.Column("trait", NAME, primary_key=True),
    )
    op.create_index("ix_provider_traits_trait", "provider_traits", ["trait"])
    op.create_table(
        "placement_aggregates",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("uuid", UUID, nullable=False),
        sa.UniqueConstraint("uuid", name="uq_placement_aggregates_uuid"),
    )
    op.create_table(
        "provider_aggregates",
        _provider_fk("provider_aggregates", primary_key=True),
        sa.Column("aggregate_id", sa.Integer,
                  sa.ForeignKey("placement_aggregates.id",
                                name="fk_provider_aggregates_aggregate_id_placement_aggregates"),
                  primary_key=True),
    )
    op.create_index("ix_provider_aggregates_aggregate_id", "provider_aggregates",
                    ["aggregate_id"])
