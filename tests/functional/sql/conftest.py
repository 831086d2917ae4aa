"""What the sql backend's functional tests share: a backend of their own
on the test database, with retries high enough for races to settle."""

from __future__ import annotations

import pytest

from rtframework import conf as rtconf
from rtframework.placement.sql import pg_write
from rtframework.placement.sql.backend import SQLBackend
from tests.fixtures import databases

# High enough that every racing writer sees the provider full rather than
# running out of retries, so the number of winners is exact.
RETRIES = 60


def make_conf(url: str, state_path: str):
    conf = rtconf.new_conf()
    conf([], project="rtframework", default_config_files=[])
    conf.set_override("connection", url, group="placement_database")
    conf.set_override("state_path", state_path)
    conf.set_override("conflict_retries", RETRIES, group="placement")
    return conf


@pytest.fixture
def backend(database_url, tmp_path):
    b = SQLBackend(make_conf(database_url, str(tmp_path)))
    yield b
    b.close()


@pytest.fixture(params=["as chosen", "general write"])
def on_each_write_path(request, backend, monkeypatch):
    """``backend`` as it chooses its allocation write path and, on
    PostgreSQL, again with the one-statement write declining every write
    (so the general write does them all)."""
    if request.param == "general write":
        if databases.selected_engine() != "postgresql":
            pytest.skip("only PostgreSQL has a second write path")
        monkeypatch.setattr(pg_write, "try_write", lambda conn, writes: False)
    return backend
