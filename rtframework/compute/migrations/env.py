"""Alembic environment of the compute records.

The engine comes from ``config.attributes["engine"]`` (set by
:func:`rtframework.db.alembic_config`), never from a URL in an ini file.
"""

from alembic import context

from rtframework.compute import models

config = context.config
engine = config.attributes["engine"]
version_table = config.get_main_option("version_table") or "compute_alembic_version"

with engine.begin() as connection:
    context.configure(
        connection=connection,
        target_metadata=models.metadata,
        version_table=version_table,
    )
    with context.begin_transaction():
        context.run_migrations()
