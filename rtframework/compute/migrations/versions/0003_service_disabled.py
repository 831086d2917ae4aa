"""Services can be disabled: no new instance or move goes to the host.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-04
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("services", sa.Column("disabled", sa.Boolean, nullable=False,
                                        server_default=sa.false()))


def downgrade() -> None:
    with op.batch_alter_table("services") as batch:
        batch.drop_column("disabled")
