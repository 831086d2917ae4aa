"""What the sql backend's functional tests share: a backend of their own
on the test database, with retries high enough for races to settle."""

from __future__ import annotations

import pytest

from rtframework import conf as rtconf
from rtframework.placement.sql.backend import SQLBackend

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
