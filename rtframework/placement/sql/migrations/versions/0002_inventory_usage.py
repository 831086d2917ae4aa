"""Each inventory stores the usage of its class on its provider.

The column starts at the sum of the allocations already there. Run it
with no allocation writer connected (``rtf db sync`` is an offline step):
a write between the new column and the recount would not be counted.
Re-running recounts every row, so an interrupted sync finishes cleanly.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-04
"""

import sqlalchemy as sa
from alembic import op

from rtframework.migration_ops import add_column

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    add_column("inventories", sa.Column("used", sa.Integer, nullable=False,
                                        server_default="0"))
    op.execute(
        "UPDATE inventories SET used = (SELECT coalesce(sum(a.used), 0) FROM allocations a "
        "WHERE a.resource_provider_id = inventories.resource_provider_id "
        "AND a.resource_class = inventories.resource_class)")


def downgrade() -> None:
    with op.batch_alter_table("inventories") as batch:
        batch.drop_column("used")
