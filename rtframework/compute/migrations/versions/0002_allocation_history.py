"""Allocation history: every allocation change, who made it and why.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-02
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

_TS = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), "mysql")


def upgrade() -> None:
    op.create_table(
        "allocation_history",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("consumer_uuid", sa.String(36), nullable=False),
        sa.Column("provider_uuid", sa.String(36), nullable=False),
        sa.Column("before", sa.JSON, nullable=False),
        sa.Column("after", sa.JSON, nullable=False),
        sa.Column("who", sa.String(255), nullable=False),
        sa.Column("why", sa.Text, nullable=False),
        sa.Column("created_at", _TS, nullable=False),
    )
    op.create_index("allocation_history_consumer_idx", "allocation_history",
                    ["consumer_uuid"])


def downgrade() -> None:
    op.drop_table("allocation_history")
