"""Services can be disabled by an operator, with a reason.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-04
"""

import sqlalchemy as sa
from alembic import op

from rtframework.migration_ops import add_column

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    add_column("services", sa.Column("disabled", sa.Boolean, nullable=False,
                                     server_default=sa.false()))
    add_column("services", sa.Column("disabled_reason", sa.String(255), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("services") as batch:
        batch.drop_column("disabled_reason")
        batch.drop_column("disabled")
