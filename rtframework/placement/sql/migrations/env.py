"""Alembic environment of the sql placement backend (see rtframework.db)."""

from alembic import context

from rtframework import db
from rtframework.placement.sql import models

db.run_migrations(context, models.metadata)
