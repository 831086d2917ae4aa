"""Migration operations that can be re-run over their own partial work.

MySQL and MariaDB commit every DDL statement on its own, so a ``db sync``
killed between a revision's ``CREATE TABLE`` and its version stamp leaves
the table behind while the version table still names the revision before.
The next upgrade re-runs that revision; built from these operations it
skips what is already there and finishes the rest. A table of the same name
that lacks columns this schema needs was not made here: that is refused
with one line naming the table and the columns, never patched over.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from rtframework.db import SchemaError
from rtframework.mysql_engine import CHARSET as MYSQL_CHARSET
from rtframework.mysql_engine import COLLATION as MYSQL_COLLATION


def _inspector() -> sa.Inspector:
    return sa.inspect(op.get_bind())


def create_table(name: str, *elements: sa.SchemaItem) -> None:
    """``op.create_table`` unless a table ``name`` with these columns exists.

    On MySQL/MariaDB the table is utf8mb4 with a binary collation whatever
    the database's default, so names differing only in case or accents
    are different names, as on PostgreSQL and SQLite.
    """
    inspector = _inspector()
    if not inspector.has_table(name):
        op.create_table(name, *elements, mysql_charset=MYSQL_CHARSET,
                        mysql_collate=MYSQL_COLLATION, mariadb_charset=MYSQL_CHARSET,
                        mariadb_collate=MYSQL_COLLATION)
        return
    present = {c["name"] for c in inspector.get_columns(name)}
    wanted = [e.name for e in elements if isinstance(e, sa.Column)]
    missing = [c for c in wanted if c not in present]
    if missing:
        raise SchemaError(
            f"table {name} exists without column(s) {', '.join(missing)}: it was not "
            f"created by rtframework; point the connection at an empty database or "
            f"drop that table, then run `rtf db sync`")


def create_index(name: str, table: str, columns: list[str], **kwargs) -> None:
    """``op.create_index`` unless ``table`` already has an index ``name``."""
    if name not in {i["name"] for i in _inspector().get_indexes(table)}:
        op.create_index(name, table, columns, **kwargs)


def add_column(table: str, column: sa.Column) -> None:
    """``op.add_column`` unless ``table`` has a column of that name already."""
    if column.name not in {c["name"] for c in _inspector().get_columns(table)}:
        op.add_column(table, column)
