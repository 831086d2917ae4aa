"""``rtf simulate --database-url`` makes its server database when it may."""

from __future__ import annotations

import uuid

import pytest
import sqlalchemy as sa

from rtframework.simulate.database import DatabaseUnavailable, ensure_database
from tests.fixtures import databases

pytestmark = pytest.mark.skipif(databases.selected_engine() == "sqlite",
                                reason="needs a database server (RTF_TEST_DB)")


def _admin() -> sa.Engine:
    if databases.selected_engine() == "postgresql":
        return sa.create_engine(f"{databases.PG_ADMIN}/postgres", isolation_level="AUTOCOMMIT")
    return sa.create_engine(f"{databases.MYSQL_ADMIN}/", isolation_level="AUTOCOMMIT")


def _url(name: str, user: str | None = None) -> str:
    base = databases.PG_ADMIN if databases.selected_engine() == "postgresql" \
        else databases.MYSQL_ADMIN
    url = sa.engine.make_url(f"{base}/{name}")
    return url.set(username=user, password=None).render_as_string(False) if user \
        else url.render_as_string(False)


def test_missing_database_is_created_once():
    name = f"rtf_soak_{uuid.uuid4().hex[:10]}"
    admin = _admin()
    try:
        assert ensure_database(_url(name)) is True
        assert ensure_database(_url(name)) is False
        engine = sa.create_engine(_url(name))
        with engine.connect() as conn:
            assert conn.exec_driver_sql("SELECT 1").scalar() == 1
        engine.dispose()
    finally:
        with admin.connect() as conn:
            conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {name}")
        admin.dispose()


def test_refused_creation_names_the_command_to_run():
    name = f"rtf_soak_{uuid.uuid4().hex[:10]}"
    role = f"rtf_nocreate_{uuid.uuid4().hex[:6]}"
    admin = _admin()
    postgres = databases.selected_engine() == "postgresql"
    with admin.connect() as conn:
        conn.exec_driver_sql(f"CREATE ROLE {role} LOGIN" if postgres
                             else f"CREATE USER '{role}'")
    try:
        with pytest.raises(DatabaseUnavailable) as err:
            ensure_database(_url(name, role))
        wanted = f"createdb -h 127.0.0.1 -p 5432 -U {role} {name}" if postgres \
            else f"-u {role} -p -e 'CREATE DATABASE `{name}`'"
        assert wanted in str(err.value)
    finally:
        with admin.connect() as conn:
            conn.exec_driver_sql(f"DROP ROLE {role}" if postgres else f"DROP USER '{role}'")
        admin.dispose()
