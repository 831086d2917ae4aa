"""A connection the database server cut (a restart, an idle-connection
kill, a Galera node leaving) is never what the compute records meet next:
they have no retry layer, so their engine checks a pooled connection
before every use and replaces a dead one."""

import pytest
import sqlalchemy as sa

from rtframework.compute.store import ComputeStore
from tests.fixtures import databases

pytestmark = pytest.mark.skipif(
    databases.selected_engine() not in ("postgresql", "mysql"),
    reason="cuts server sessions of PostgreSQL or MySQL/MariaDB (RTF_TEST_DB)")


def _cut_every_session_of(url: str) -> int:
    """End every server session connected to ``url``'s database, as a
    server restart would; return how many were ended."""
    name = sa.engine.make_url(url).database
    if databases.selected_engine() == "postgresql":
        admin = sa.create_engine(f"{databases.PG_ADMIN}/postgres", isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            ended = conn.execute(sa.text(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE datname = :name AND pid <> pg_backend_pid()"), {"name": name}).scalar()
    else:
        admin = sa.create_engine(databases.MYSQL_ADMIN, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            ids = conn.execute(sa.text(
                "SELECT id FROM information_schema.processlist "
                "WHERE db = :name AND id <> connection_id()"), {"name": name}).scalars().all()
            for session in ids:
                conn.execute(sa.text(f"KILL {int(session)}"))
            ended = len(ids)
    admin.dispose()
    return ended


def test_compute_records_carry_on_after_the_server_cut_their_connection(
        conf, config, database_url):
    config.config(connection=database_url, group="database")
    store = ComputeStore.from_conf(conf)
    try:
        assert store.list_compute_nodes() == []
        assert _cut_every_session_of(database_url) >= 1

        # The pooled connection is dead; the next call still answers.
        assert store.list_compute_nodes() == []
    finally:
        store.engine.dispose()
