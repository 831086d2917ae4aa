"""pytest plugin of the contract suite (entry point ``pytest11``).

Adds ``--rtf-backend NAME`` and ``--rtf-config-file PATH`` and the fixtures
the contract tests use. A ``backend`` fixture defined in a ``conftest.py``
takes precedence over the one here.
"""

from __future__ import annotations

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("rtframework", "rtframework placement backend contract")
    group.addoption("--rtf-backend", metavar="NAME", default=None,
                    help="entry point (group rtframework.placement) of the backend the "
                    "contract tests run against")
    group.addoption("--rtf-config-file", metavar="PATH", action="append", default=[],
                    help="configuration file for the backend (or, with --rtf-driver, the "
                    "driver) under test (repeatable)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "placement: a test of the placement backend contract")


@pytest.fixture
def rtf_conf(tmp_path, pytestconfig):
    """A fresh ConfigOpts with every rtframework option, the files given by
    ``--rtf-config-file`` and ``state_path`` in the test's tmp dir."""
    from rtframework import conf as rtconf

    conf = rtconf.new_conf()
    conf([], project="rtframework",
         default_config_files=pytestconfig.getoption("rtf_config_file"))
    conf.set_override("state_path", str(tmp_path))
    yield conf
    conf.reset()


@pytest.fixture
def backend(rtf_conf, pytestconfig):
    """The backend ``--rtf-backend`` names, loaded as rtframework loads it."""
    from rtframework.placement.backend import load_backend

    name = pytestconfig.getoption("rtf_backend")
    if not name:
        pytest.fail("name the backend under test: pytest --rtf-backend NAME "
                    "(an entry point in rtframework.placement), or define a "
                    "'backend' fixture", pytrace=False)
    built = load_backend(rtf_conf, name)
    yield built
    built.close()


@pytest.fixture
def make_provider(backend):
    """Create a provider with a fresh name and optional inventory/traits."""
    from rtframework.placement import types as t
    from rtframework.placement.contract_tests import unique

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
    from rtframework.placement.contract_tests import new_uuid

    def do(allocations, consumer=None, generation=None, project="proj", user="user"):
        consumer = consumer or new_uuid()
        backend.put_allocations(
            consumer, allocations, project_id=project, user_id=user,
            consumer_generation=generation,
        )
        return consumer

    return do
