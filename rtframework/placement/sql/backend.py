"""SQLBackend: the placement contract over a SQL database.

SQLite (embedded, one machine), PostgreSQL and MySQL/MariaDB. Every write
is one transaction that bumps the generation of each provider it touches
with a compare-and-swap UPDATE; see ``allocations`` for why that keeps
capacity right between concurrent writers at READ COMMITTED.

The class is a composition: each object's SQL sits in its own module
(``providers``, ``inventories``, ``traits``, ``aggregates``,
``resource_classes``, ``usages``, ``allocation_reads``, ``allocations``,
``candidates``); this module opens the database, keeps the schema current
and retries every public call as one transaction.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
from collections.abc import Iterator, Mapping, Sequence

import sqlalchemy as sa
from oslo_config import cfg

from rtframework import db, retry
from rtframework.conf import database as conf_database
from rtframework.placement import backend as contract
from rtframework.placement import errors, validation
from rtframework.placement import types as t
from rtframework.placement.pause_gc import pause_gc
from rtframework.placement.sql import aggregates as _aggregates
from rtframework.placement.sql import (
    allocation_reads,
    candidates,
    pg_write,
    providers,
    reshape,
    resource_classes,
    usages,
)
from rtframework.placement.sql import allocations as alloc
from rtframework.placement.sql import inventories as _inventories
from rtframework.placement.sql import traits as _traits
from rtframework.placement.sql.dberrors import (
    is_connection_lost,
    is_transient,
    translated,
)
from rtframework.placement.sql.write_plan import ProviderRaced

SCRIPT_LOCATION = os.path.join(os.path.dirname(__file__), "migrations")
VERSION_TABLE = "placement_alembic_version"
GROUP = "placement_database"


def upgrade_schema(engine: sa.Engine) -> tuple[str | None, str | None]:
    return db.upgrade(SCRIPT_LOCATION, engine, VERSION_TABLE)


def sync_schema(conf: cfg.ConfigOpts) -> tuple[str | None, str | None]:
    """Bring the placement database to the newest schema (``rtf db sync``);
    the revisions before and after."""
    engine = db.engine_for(conf, GROUP)
    try:
        with _opening(conf):
            return upgrade_schema(engine)
    finally:
        engine.dispose()


def recount_usage(conf: cfg.ConfigOpts) -> list[tuple[str, str, int, int]]:
    """Bring the schema up to date, then recount the usage stored with
    every inventory (``rtf db recount-usage``): the rows that changed, as
    (provider, class, stored, counted)."""
    engine = db.engine_for(conf, GROUP)
    try:
        with _opening(conf):
            upgrade_schema(engine)
            return usages.recount(engine)
    finally:
        engine.dispose()


@contextlib.contextmanager
def _opening(conf: cfg.ConfigOpts) -> Iterator[None]:
    """A database that cannot be opened is BackendUnavailable naming
    ``[placement_database] connection``."""
    try:
        with db.opening(conf, GROUP):
            yield
    except db.DatabaseNotFound:
        raise  # a configuration error, not an unavailable service
    except db.DatabaseError as exc:
        raise errors.BackendUnavailable(str(exc)) from exc.__cause__


class SQLBackend(contract.PlacementBackend):
    """Placement backed by ``[placement_database] connection``."""

    @classmethod
    def register_opts(cls, conf: cfg.ConfigOpts) -> None:
        conf_database.register_opts(conf)

    def __init__(self, conf: cfg.ConfigOpts) -> None:
        super().__init__(conf)
        self.engine = db.engine_for(conf, GROUP)
        # The one-statement allocation write's sessions (see
        # pg_write.SESSION_SETTINGS): an engine of their own on PostgreSQL
        # 12 and newer; this one on older servers (other engines have no
        # such write).
        self.statement_engine = self.engine
        self.backoff = retry.Backoff(retries=conf.placement.conflict_retries)
        try:
            with _opening(conf):
                if conf[GROUP].auto_sync:
                    upgrade_schema(self.engine)
                else:
                    try:
                        db.require_current(SCRIPT_LOCATION, self.engine, VERSION_TABLE,
                                           "placement")
                    except db.SchemaNotCurrent as exc:
                        raise errors.BackendUnavailable(str(exc)) from exc
            # Known once the schema check connected.
            version = self.engine.dialect.server_version_info or (0,)
            if self.engine.dialect.name == "postgresql" and \
                    version >= pg_write.SESSION_SETTINGS_SINCE:
                self.statement_engine = db.engine_for(conf, GROUP, pg_write.SESSION_SETTINGS)
        except BaseException:
            self.close()
            raise

    @property
    def engines(self) -> tuple[sa.Engine, ...]:
        """Every engine this backend opens (one, or two on PostgreSQL)."""
        return tuple(dict.fromkeys((self.engine, self.statement_engine)))

    def close(self) -> None:
        for engine in self.engines:
            engine.dispose()

    def _read(self):
        return db.read(self.engine)

    def _write(self):
        return db.transaction(self.engine)

    # Each object's SQL lives in its own module; every method here is one
    # transaction, retried as a whole (see the end of this module).

    # -- resource classes and traits ------------------------------------
    def list_resource_classes(self) -> list[str]:
        return resource_classes.list_all(self.engine)

    def ensure_resource_class(self, name: str) -> None:
        resource_classes.ensure(self.engine, name)

    def delete_resource_class(self, name: str) -> None:
        resource_classes.delete(self.engine, name)

    def rename_resource_class(self, name: str, new_name: str) -> None:
        resource_classes.rename(self.engine, name, new_name)

    def list_traits(self, prefix: str | None = None, *,
                    associated: bool | None = None) -> list[str]:
        return _traits.list_all(self.engine, prefix, associated)

    def ensure_trait(self, name: str) -> None:
        _traits.ensure(self.engine, name)

    def delete_trait(self, name: str) -> None:
        _traits.delete(self.engine, name)

    # -- providers -------------------------------------------------------
    def create_provider(
        self, name: str, uuid: str | None = None, parent_uuid: str | None = None
    ) -> t.ResourceProvider:
        return providers.create(self.engine, name, uuid, parent_uuid)

    def get_provider(self, uuid: str) -> t.ResourceProvider:
        return providers.get(self.engine, uuid)

    def list_providers(self, query: t.ProviderQuery | None = None) -> list[t.ResourceProvider]:
        return providers.list_matching(self.engine, query)

    def update_provider(
        self, uuid: str, *, name: str, parent_uuid: str | None = None, detach: bool = False
    ) -> t.ResourceProvider:
        return providers.update(self.engine, uuid, name=name, parent_uuid=parent_uuid,
                                detach=detach)

    def delete_provider(self, uuid: str) -> None:
        providers.delete(self.engine, uuid)

    # -- inventory -------------------------------------------------------
    def get_inventories(self, uuid: str) -> t.ProviderInventories:
        return _inventories.of_provider(self.engine, uuid)

    def set_inventories(
        self, uuid: str, generation: int, inventories: Mapping[str, t.Inventory]
    ) -> int:
        return _inventories.replace_all(self.engine, uuid, generation, inventories)

    def set_inventory(
        self, uuid: str, generation: int, resource_class: str, inventory: t.Inventory
    ) -> int:
        return _inventories.set_one(self.engine, uuid, generation, resource_class, inventory)

    def delete_inventory(self, uuid: str, generation: int, resource_class: str) -> int:
        return _inventories.delete_one(self.engine, uuid, generation, resource_class)

    # -- traits and aggregates of a provider -----------------------------
    def get_provider_traits(self, uuid: str) -> t.ProviderTraits:
        return _traits.of_provider(self.engine, uuid)

    def set_provider_traits(self, uuid: str, generation: int, traits: frozenset[str]) -> int:
        return _traits.set_of_provider(self.engine, uuid, generation, traits)

    def get_provider_aggregates(self, uuid: str) -> t.ProviderAggregates:
        return _aggregates.of_provider(self.engine, uuid)

    def set_provider_aggregates(
        self, uuid: str, generation: int, aggregates: frozenset[str], *, bump: bool = True
    ) -> int:
        return _aggregates.set_of_provider(self.engine, uuid, generation, aggregates,
                                           bump=bump)

    # -- allocations -----------------------------------------------------
    def get_consumer_allocations(self, consumer_uuid: str) -> t.ConsumerAllocations:
        return allocation_reads.of_consumer(self.engine, consumer_uuid)

    def get_consumers_allocations(
        self, consumer_uuids: Sequence[str]
    ) -> dict[str, t.ConsumerAllocations]:
        return allocation_reads.of_consumers(self.engine, list(consumer_uuids))

    def get_provider_allocations(self, uuid: str) -> dict[str, dict[str, int]]:
        return allocation_reads.of_provider(self.engine, uuid)

    def write_allocations(self, writes: Sequence[t.AllocationWrite]) -> None:
        # A provider race (ProviderRaced) is retried by _retried, as
        # Placement does server-side; a consumer generation conflict must
        # reach the caller, who has to re-read and decide.
        writes = validation.allocation_writes(writes)
        with translated():
            alloc.write(self.engine, writes, self.statement_engine)

    def reshape(self, inventories: Mapping[str, t.ProviderInventories],
                allocations: Sequence[t.AllocationWrite]) -> None:
        reshape.reshape(self.engine, inventories, allocations)

    def delete_allocations(self, consumer_uuid: str) -> None:
        consumer_uuid = validation.normalize_uuid(consumer_uuid, "consumer uuid")
        with translated(), self._write() as conn:
            alloc.delete_consumer(conn, consumer_uuid, "deleted by operator")

    # -- usages and candidates -------------------------------------------
    def get_provider_usages(self, uuid: str) -> dict[str, int]:
        return usages.of_provider(self.engine, uuid)

    def get_project_usages(self, project_id: str, user_id: str | None = None) -> dict[str, int]:
        return usages.of_project(self.engine, project_id, user_id)

    def get_project_usages_by_type(self, project_id: str, user_id: str | None = None,
                                   consumer_type: str | None = None
                                   ) -> dict[str, dict[str, int]]:
        return usages.of_project_by_type(self.engine, project_id, user_id, consumer_type)

    def get_allocation_candidates(self, query: t.CandidateQuery) -> t.AllocationCandidates:
        query = validation.candidate_query(query)
        with translated(), self._read() as conn, pause_gc():
            return candidates.find(conn, query)


def _worth_retrying(exc: BaseException) -> bool:
    if isinstance(exc, ProviderRaced):
        return True
    return isinstance(exc, errors.BackendUnavailable) and is_transient(exc.__cause__)


def _unreachable(exc: BaseException) -> bool:
    return isinstance(exc, errors.BackendUnavailable) and is_connection_lost(exc.__cause__)


def _retried(method):
    """Run ``method`` (one transaction) again after a lost race or a lost
    connection, through the one retry layer."""
    @functools.wraps(method)
    def call(self, *args, **kwargs):
        return retry.call(lambda: method(self, *args, **kwargs), self.backoff,
                          lambda: _describe(method.__name__, args), _worth_retrying,
                          _unreachable)
    return call


def _describe(name: str, args: tuple) -> str:
    if name == "write_allocations" and args:
        return f"allocation write of consumer(s) {', '.join(w.consumer_uuid for w in args[0])}"
    return f"{name}({', '.join(repr(a) for a in args)[:200]})"


# Every public call is one transaction: each one is retried as a whole.
for _name, _method in list(vars(SQLBackend).items()):
    if inspect.isfunction(_method) and not _name.startswith("_") and _name != "close":
        setattr(SQLBackend, _name, _retried(_method))
