"""Fixtures shared by every test: config, databases, backends.

Each test gets a fresh ConfigOpts (never the global CONF) whose state_path
is the test's tmp dir, and, when it asks for one, its own database.
"""

from __future__ import annotations

import os

import pytest
from oslo_config import fixture as config_fixture

from rtframework import conf as rtconf
from tests.fixtures import databases
from tests.fixtures.placement_server import http_backend, placement_server  # noqa: F401


def pytest_report_header(config):
    return (
        f"rtframework test database: {databases.selected_engine()}, "
        f"placement backend: {os.environ.get('RTF_TEST_BACKEND', 'sql')}"
    )


@pytest.fixture
def conf(tmp_path):
    """A parsed ConfigOpts with every framework option, state under tmp."""
    c = rtconf.new_conf()
    c([], project="rtframework", default_config_files=[])
    fixture = config_fixture.Config(c)
    fixture.setUp()
    fixture.config(state_path=str(tmp_path), host="test-host")
    yield c
    fixture.cleanUp()


@pytest.fixture
def config(conf):
    """oslo.config's fixture over ``conf``: ``config.config(name=value, group=...)``."""
    fixture = config_fixture.Config(conf)
    fixture.setUp()
    yield fixture
    fixture.cleanUp()


@pytest.fixture
def database_url(tmp_path):
    """URL of a fresh database of the engine RTF_TEST_DB selects (on Galera:
    this process's database with every row deleted, see databases)."""
    if databases.selected_engine() == "galera":
        yield databases.emptied_galera_database()
        return
    with databases.temporary_database(databases.selected_engine(), str(tmp_path)) as url:
        yield url


def pytest_collection_modifyitems(config, items):
    if databases.selected_engine() != "galera":
        return
    from tests.fixtures import galera

    reason = galera.missing()
    if reason:
        # Say why once, at the top, and skip instead of failing.
        print(f"\nRTF_TEST_DB=galera: every test skipped: {reason}")
        for item in items:
            item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture
def db_engine_name():
    return databases.selected_engine()
