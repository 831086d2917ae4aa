"""Migrations record what their claim holds: the instance's allocations
when the move began (source) and the chosen candidate's allocation request
(destination), provider uuid -> resource class -> amount.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-04
"""

import sqlalchemy as sa
from alembic import op

from rtframework.migration_ops import add_column

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

_COLUMNS = ("source_allocations", "dest_allocations")


def upgrade() -> None:
    # One statement per column, each skipped when present: an upgrade cut
    # short between the two runs again to the end.
    for name in _COLUMNS:
        add_column("migrations", sa.Column(name, sa.JSON, nullable=True))


def downgrade() -> None:
    for name in _COLUMNS:
        op.drop_column("migrations", name)
