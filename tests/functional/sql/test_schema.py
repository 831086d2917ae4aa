"""The sql backend's schema: migrations, auto_sync, SQLite settings."""

from __future__ import annotations

import logging
import uuid

import pytest
import sqlalchemy as sa
from alembic import command as alembic_command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from rtframework import db
from rtframework.placement import errors
from rtframework.placement import types as t
from rtframework.placement.sql import backend as sql_backend
from rtframework.placement.sql import models


@pytest.fixture
def placement_conf(conf, config, database_url):
    config.config(connection=database_url, group="placement_database")
    return conf


def test_migrations_create_exactly_the_models(placement_conf):
    sql_backend.sync_schema(placement_conf)
    engine = db.engine_for(placement_conf, "placement_database")
    try:
        with engine.connect() as conn:
            diff = compare_metadata(MigrationContext.configure(conn), models.metadata)
        # The version table is alembic's own.
        diff = [d for d in diff if not (d[0] == "remove_table"
                                        and d[1].name == sql_backend.VERSION_TABLE)]
        assert diff == []
        assert db.current_revision(sql_backend.SCRIPT_LOCATION, engine,
                                   sql_backend.VERSION_TABLE) == "0002"
    finally:
        engine.dispose()


def test_upgrade_counts_the_usage_of_allocations_made_before_it(placement_conf):
    """A database at 0001 holds allocations but no stored usage: the
    upgrade stores each inventory's sum, and the searches see it."""
    engine = db.engine_for(placement_conf, "placement_database")
    try:
        with db.schema_lock(engine, sql_backend.VERSION_TABLE):
            alembic_command.upgrade(db.alembic_config(
                sql_backend.SCRIPT_LOCATION, engine, sql_backend.VERSION_TABLE), "0001")
        with engine.begin() as conn:
            for pid, name in ((1, "full"), (2, "half")):
                conn.execute(sa.text(
                    "INSERT INTO resource_providers (id, uuid, name, generation, "
                    "root_provider_id) VALUES (:id, :uuid, :name, 1, :id)"),
                    {"id": pid, "uuid": str(uuid.uuid4()), "name": name})
                conn.execute(sa.text(
                    "INSERT INTO inventories (resource_provider_id, resource_class, total, "
                    "reserved, min_unit, max_unit, step_size, allocation_ratio) "
                    "VALUES (:id, 'VCPU', 8, 0, 1, 8, 1, 1.0)"), {"id": pid})
            for pid, consumer, used in ((1, "a", 6), (1, "b", 2), (2, "a", 4)):
                conn.execute(sa.text(
                    "INSERT INTO allocations (resource_provider_id, consumer_id, "
                    "resource_class, used) VALUES (:id, :c, 'VCPU', :used)"),
                    {"id": pid, "c": consumer, "used": used})
        sql_backend.sync_schema(placement_conf)
        with engine.connect() as conn:
            assert dict(conn.execute(sa.text(
                "SELECT resource_provider_id, used FROM inventories")).all()) == {1: 8, 2: 4}
    finally:
        engine.dispose()
    backend = sql_backend.SQLBackend(placement_conf)
    try:
        found = backend.get_allocation_candidates(t.CandidateQuery(resources={"VCPU": 1}))
        assert [s.resources["VCPU"].used for s in found.provider_summaries.values()] == [4]
    finally:
        backend.close()


def test_sync_is_idempotent(placement_conf):
    """A second sync changes nothing: same revision, same rows."""
    sql_backend.sync_schema(placement_conf)
    backend = sql_backend.SQLBackend(placement_conf)
    try:
        rp = backend.create_provider("kept-" + uuid.uuid4().hex)
        sql_backend.sync_schema(placement_conf)
        assert db.current_revision(sql_backend.SCRIPT_LOCATION, backend.engine,
                                   sql_backend.VERSION_TABLE) == \
            db.head_revision(sql_backend.SCRIPT_LOCATION)
        assert backend.get_provider(rp.uuid) == rp
    finally:
        backend.close()


def test_auto_sync_off_refuses_a_database_without_schema(placement_conf, config, database_url):
    config.config(auto_sync=False, group="placement_database")
    with pytest.raises(errors.BackendUnavailable) as caught:
        sql_backend.SQLBackend(placement_conf)
    message = str(caught.value)
    assert "placement database" in message and "has no schema" in message
    assert message.endswith("run `rtf db sync`") and "\n" not in message
    engine = sa.create_engine(database_url)
    try:
        assert sa.inspect(engine).get_table_names() == []
    finally:
        engine.dispose()


def test_auto_sync_creates_the_schema(placement_conf):
    backend = sql_backend.SQLBackend(placement_conf)
    try:
        names = set(sa.inspect(backend.engine).get_table_names())
        assert {"resource_providers", "inventories", "allocations", "consumers",
                sql_backend.VERSION_TABLE} <= names
    finally:
        backend.close()


@pytest.mark.sqlite_only
def test_embedded_default_is_a_wal_sqlite_file_under_state_path(conf, tmp_path, db_engine_name):
    if db_engine_name != "sqlite":
        pytest.skip("checks the embedded SQLite default")
    backend = sql_backend.SQLBackend(conf)
    try:
        assert backend.engine.url.database == str(tmp_path / "placement.sqlite")
        with backend.engine.connect() as c:
            assert c.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
    finally:
        backend.close()


def test_shrinking_below_usage_warns_with_numbers(placement_conf, caplog):
    backend = sql_backend.SQLBackend(placement_conf)
    try:
        rp = backend.create_provider(f"rp-{uuid.uuid4().hex}")
        gen = backend.set_inventories(rp.uuid, 0, {"VCPU": t.Inventory(8)})
        backend.put_allocations(str(uuid.uuid4()), {rp.uuid: {"VCPU": 6}}, project_id="p",
                                user_id="u", consumer_generation=None)
        with caplog.at_level(logging.WARNING, logger="rtframework.placement.sql"):
            backend.set_inventory(rp.uuid, gen + 1, "VCPU", t.Inventory(4))
        warning = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert any(rp.uuid in m and "used 6 > capacity 4" in m for m in warning)
    finally:
        backend.close()


def test_allocation_changes_are_logged_at_info(placement_conf, caplog):
    backend = sql_backend.SQLBackend(placement_conf)
    try:
        rp = backend.create_provider(f"rp-{uuid.uuid4().hex}")
        backend.set_inventories(rp.uuid, 0, {"VCPU": t.Inventory(8)})
        consumer = str(uuid.uuid4())
        with caplog.at_level(logging.INFO, logger="rtframework.placement.sql"):
            backend.put_allocations(consumer, {rp.uuid: {"VCPU": 2}}, project_id="p",
                                    user_id="u", consumer_generation=None)
            backend.delete_allocations(consumer)
        lines = [r.getMessage() for r in caplog.records if consumer in r.getMessage()]
        assert len(lines) == 2
        assert all(rp.uuid in line for line in lines)
        assert "claimed" in lines[0] and "deleted by operator" in lines[1]
    finally:
        backend.close()
