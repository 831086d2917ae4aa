"""The backend under test for the contract suite (rtframework.placement.contract_tests).

RTF_TEST_BACKEND=sql (default): an SQLBackend on the test's own database.
RTF_TEST_BACKEND=http: a real OpenStack Placement whose database outlives
the test, so contract tests use fresh uuids/names and filtered listings.
"""

from __future__ import annotations

import os

import pytest


@pytest.fixture
def backend(request):
    if os.environ.get("RTF_TEST_BACKEND", "sql") == "http":
        # Provided by the http backend's fixtures (tests/fixtures).
        return request.getfixturevalue("http_backend")
    return request.getfixturevalue("sql_backend")


@pytest.fixture
def sql_backend(conf, config, database_url):
    from rtframework.placement.sql.backend import SQLBackend

    config.config(connection=database_url, group="placement_database")
    b = SQLBackend(conf)
    yield b
    b.close()
