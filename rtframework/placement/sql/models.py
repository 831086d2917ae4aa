"""Schema of the sql placement backend (SQLAlchemy Core tables).

Resource classes and traits are stored by name: the standard ones come from
os-resource-classes and os-traits and are not stored at all, custom ones
have a row in ``resource_classes`` / ``traits`` so that they can be listed
and deleted. The migrations in ``migrations/versions`` create exactly these
tables; a test compares the two.
"""

from __future__ import annotations

import sqlalchemy as sa

metadata = sa.MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

# Names of classes and traits are ASCII identifiers of at most 255 chars.
NAME = sa.String(255)
UUID = sa.String(36)

resource_providers = sa.Table(
    "resource_providers",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("uuid", UUID, nullable=False, unique=True),
    sa.Column("name", sa.String(200), nullable=False, unique=True),
    sa.Column("generation", sa.Integer, nullable=False, default=0),
    sa.Column("parent_provider_id", sa.Integer, sa.ForeignKey("resource_providers.id"),
              nullable=True, index=True),
    # Set to the provider's own id for a root; NULL only between the INSERT
    # and the UPDATE that follows it in the same transaction.
    sa.Column("root_provider_id", sa.Integer, sa.ForeignKey("resource_providers.id"),
              nullable=True, index=True),
)

resource_classes = sa.Table(
    "resource_classes",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("name", NAME, nullable=False, unique=True),
)

inventories = sa.Table(
    "inventories",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("resource_provider_id", sa.Integer, sa.ForeignKey("resource_providers.id"),
              nullable=False),
    # No index on resource_class alone: without statistics SQLite would
    # pick it over the unique (provider, class) key and scan every provider
    # of the class per candidate tree.
    sa.Column("resource_class", NAME, nullable=False),
    sa.Column("total", sa.Integer, nullable=False),
    sa.Column("reserved", sa.Integer, nullable=False),
    sa.Column("min_unit", sa.Integer, nullable=False),
    sa.Column("max_unit", sa.Integer, nullable=False),
    sa.Column("step_size", sa.Integer, nullable=False),
    sa.Column("allocation_ratio", sa.Float, nullable=False),
    # Sum of the allocations of this class on this provider, kept by every
    # allocation write in the same transaction: searches read it instead of
    # summing the allocations of every provider they pass.
    sa.Column("used", sa.Integer, nullable=False, server_default="0"),
    sa.UniqueConstraint("resource_provider_id", "resource_class"),
)

consumers = sa.Table(
    "consumers",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("uuid", UUID, nullable=False, unique=True),
    sa.Column("project_id", sa.String(255), nullable=False, index=True),
    sa.Column("user_id", sa.String(255), nullable=False),
    sa.Column("generation", sa.Integer, nullable=False, default=0),
    sa.Column("consumer_type", sa.String(255), nullable=True),
)

allocations = sa.Table(
    "allocations",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("resource_provider_id", sa.Integer, sa.ForeignKey("resource_providers.id"),
              nullable=False),
    sa.Column("consumer_id", UUID, nullable=False, index=True),
    sa.Column("resource_class", NAME, nullable=False),
    sa.Column("used", sa.Integer, nullable=False),
    sa.Index("ix_allocations_provider_class", "resource_provider_id", "resource_class"),
)

traits = sa.Table(
    "traits",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("name", NAME, nullable=False, unique=True),
)

provider_traits = sa.Table(
    "provider_traits",
    metadata,
    sa.Column("resource_provider_id", sa.Integer, sa.ForeignKey("resource_providers.id"),
              primary_key=True),
    sa.Column("trait", NAME, primary_key=True),
    sa.Index("ix_provider_traits_trait", "trait"),
)

placement_aggregates = sa.Table(
    "placement_aggregates",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("uuid", UUID, nullable=False, unique=True),
)

provider_aggregates = sa.Table(
    "provider_aggregates",
    metadata,
    sa.Column("resource_provider_id", sa.Integer, sa.ForeignKey("resource_providers.id"),
              primary_key=True),
    sa.Column("aggregate_id", sa.Integer, sa.ForeignKey("placement_aggregates.id"),
              primary_key=True),
    sa.Index("ix_provider_aggregates_aggregate_id", "aggregate_id"),
)
