"""The backend under test for the contract suite.

RTF_TEST_BACKEND=sql (default): an SQLBackend on the test's own database.
RTF_TEST_BACKEND=http: a real OpenStack Placement whose database outlives
the test, so contract tests use fresh uuids/names and filtered listings.
"""

from __future__ import annotations

import os
import uuid

import pytest

from rtframework.placement import types as t


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


def unique(prefix: str = "rp") -> str:
    return f"{prefix}-{uuid.uuid4().hex}"


def new_uuid() -> str:
    return str(uuid.uuid4())


@pytest.fixture
def make_provider(backend):
    """Create a provider with a fresh name and optional inventory/traits."""

    def make(inventory=None, parent=None, traits=(), aggregates=(), name=None):
        rp = backend.create_provider(name or unique(), parent_uuid=parent)
        gen = rp.generation
        if inventory:
            gen = backend.set_inventories(rp.uuid, gen, {
                rc: inv if isinstance(inv, t.Inventory) else t.Inventory(total=inv)
                for rc, inv in inventory.items()
            })
        if traits:
            for trait in traits:
                backend.ensure_trait(trait)
            gen = backend.set_provider_traits(rp.uuid, gen, frozenset(traits))
        if aggregates:
            gen = backend.set_provider_aggregates(rp.uuid, gen, frozenset(aggregates))
        return backend.get_provider(rp.uuid)

    return make


@pytest.fixture
def claim(backend):
    """Write one consumer's allocations; returns the consumer uuid."""

    def do(allocations, consumer=None, generation=None, project="proj", user="user"):
        consumer = consumer or new_uuid()
        backend.put_allocations(
            consumer, allocations, project_id=project, user_id=user,
            consumer_generation=generation,
        )
        return consumer

    return do
