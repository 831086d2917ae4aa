"""Fixtures of the functional tests."""

from __future__ import annotations

import os

import pytest

from rtframework.compute.store import ComputeStore
from rtframework.placement.backend import load_backend
from tests.fixtures.placement_server import empty_placement


@pytest.fixture
def store(conf, config, database_url):
    """A ComputeStore on the test's own database (schema synced)."""
    config.config(connection=database_url, group="database")
    s = ComputeStore.from_conf(conf)
    yield s
    s.close()


@pytest.fixture
def fresh_backend(request, conf, config, database_url):
    """The placement backend RTF_TEST_BACKEND selects, holding nothing: the
    sql backend on the test database, or a real OpenStack Placement emptied
    first (one per xdist worker, so nothing else uses it meanwhile), for
    tests that name hosts and nodes as a fresh cloud would."""
    if os.environ.get("RTF_TEST_BACKEND", "sql") == "http":
        b = request.getfixturevalue("http_backend")
        empty_placement(b)
        yield b
        return
    config.config(connection=database_url, group="placement_database")
    b = load_backend(conf, "sql")
    yield b
    b.close()
