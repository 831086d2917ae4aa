"""Alembic environment: runs on the engine rtframework.db hands over."""

from alembic import context

from rtframework.placement.sql import models

config = context.config
engine = config.attributes["engine"]
version_table = config.get_main_option("version_table") or "placement_alembic_version"

with engine.begin() as connection:
    context.configure(
        connection=connection,
        target_metadata=models.metadata,
        version_table=version_table,
        # SQLite cannot ALTER most things in place; batch mode copies tables.
        render_as_batch=connection.dialect.name == "sqlite",
    )
    context.run_migrations()
