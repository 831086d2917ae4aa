"""Fixtures of the functional tests."""

from __future__ import annotations

import pytest

from rtframework.compute.store import ComputeStore


@pytest.fixture
def store(conf, config, database_url):
    """A ComputeStore on the test's own database (schema synced)."""
    config.config(connection=database_url, group="database")
    s = ComputeStore.from_conf(conf)
    yield s
    s.close()
