"""Initial compute records schema, step: audit_findings.

The last step of the initial schema keeps the id 0001: databases
created before the schema was built in steps are stamped 0001 (or
later) and hold exactly what the steps build.

Revision ID: 0001
Revises: 0001_04
Create Date: 2026-12-02
"""

import sqlalchemy as sa

from rtframework.compute.migrations.columns import TIMESTAMP
from rtframework.migration_ops import create_index, create_table

revision = "0001"
down_revision = "0001_04"
branch_labels = None
depends_on = None


def upgrade() -> None:
    create_table(
        "audit_findings",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("consumer_uuid", sa.String(36), nullable=False),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("kind", sa.String(64), nullable=False),
        sa.Column("detail", sa.Text, nullable=False),
        sa.Column("created_at", TIMESTAMP, nullable=False),
    )
    create_index("audit_findings_consumer_idx", "audit_findings", ["consumer_uuid"])
