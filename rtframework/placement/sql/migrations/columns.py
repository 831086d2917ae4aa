"""Column shapes the placement revisions share."""

import sqlalchemy as sa

NAME = sa.String(255)
UUID = sa.String(36)


def provider_fk(table: str, column: str = "resource_provider_id", **kwargs) -> sa.Column:
    """A column referencing resource_providers.id, its constraint named as
    models.metadata's naming convention names it."""
    fk = sa.ForeignKey("resource_providers.id", name=f"fk_{table}_{column}_resource_providers")
    return sa.Column(column, sa.Integer, fk, **kwargs)
