"""Initial compute records schema, step: instances.

Revision ID: 0001_03
Revises: 0001_02
Create Date: 2026-12-02
"""

import sqlalchemy as sa

from rtframework.compute.migrations.columns import TIMESTAMP
from rtframework.migration_ops import create_index, create_table

revision = "0001_03"
down_revision = "0001_02"
branch_labels = None
depends_on = None


def upgrade() -> None:
    create_table(
        "instances",
        sa.Column("uuid", sa.String(36), primary_key=True),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("project_id", sa.String(255), nullable=False),
        sa.Column("user_id", sa.String(255), nullable=False),
        sa.Column("flavor_name", sa.String(255), nullable=False),
        sa.Column("flavor_resources", sa.JSON, nullable=False),
        sa.Column("host", sa.String(255), nullable=True),
        sa.Column("node", sa.String(255), nullable=True),
        sa.Column("vm_state", sa.String(32), nullable=False),
        sa.Column("task_state", sa.String(64), nullable=True),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.Column("updated_at", TIMESTAMP, nullable=False),
    )
    create_index("instances_host_idx", "instances", ["host"])
