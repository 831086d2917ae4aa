"""Allocation history: every allocation change, who made it and why.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-02
"""

import sqlalchemy as sa
from alembic import op

from rtframework.compute.migrations.columns import TIMESTAMP
from rtframework.migration_ops import create_index, create_table

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    create_table(
        "allocation_history",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("consumer_uuid", sa.String(36), nullable=False),
        sa.Column("provider_uuid", sa.String(36), nullable=False),
        sa.Column("before", sa.JSON, nullable=False),
        sa.Column("after", sa.JSON, nullable=False),
        sa.Column("who", sa.String(255), nullable=False),
        sa.Column("why", sa.Text, nullable=False),
        sa.Column("created_at", TIMESTAMP, nullable=False),
    )
    create_index("allocation_history_consumer_idx", "allocation_history",
                 ["consumer_uuid"])


def downgrade() -> None:
    op.drop_table("allocation_history")
