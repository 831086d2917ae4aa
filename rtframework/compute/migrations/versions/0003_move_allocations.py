"""Migrations record what their claim holds: the instance's allocations
when the move began (source) and the chosen candidate's allocation request
(destination), provider uuid -> resource class -> amount.

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

_COLUMNS = ("source_allocations", "dest_allocations")


def _present() -> set[str]:
    return {c["name"] for c in sa.inspect(op.get_bind()).get_columns("migrations")}


def upgrade() -> None:
    # One column per statement, each skipped when present: an upgrade cut
    # short between the two runs again to the end.
    present = _present()
    for name in _COLUMNS:
        if name not in present:
            op.add_column("migrations", sa.Column(name, sa.JSON, nullable=True))


def downgrade() -> None:
    present = _present()
    for name in _COLUMNS:
        if name in present:
            op.drop_column("migrations", name)
