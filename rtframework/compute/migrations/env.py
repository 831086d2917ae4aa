"""Alembic environment of the compute records (see rtframework.db)."""

from alembic import context

from rtframework import db
from rtframework.compute import models

db.run_migrations(context, models.metadata)
