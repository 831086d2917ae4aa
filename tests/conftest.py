"""Fixtures shared by every test: config, databases, backends.

Each test gets a fresh ConfigOpts (never the global CONF) whose state_path
is the test's tmp dir, and, when it asks for one, its own database.
"""

from __future__ import annotations

import gc
import os

import pytest
from hypothesis import settings
from oslo_config import fixture as config_fixture

from rtframework import conf as rtconf
from tests.fixtures import databases
from tests.fixtures.placement_server import http_backend, placement_server  # noqa: F401

# Hypothesis: the default profile ("fixed") is derandomized (the same examples on
# every run, so CI cannot pass or fail by luck) with a small budget; the
# ``hypothesis`` tox env loads "thorough": random examples, a larger
# budget, and the seed of any failure printed so it can be replayed.
settings.register_profile("fixed", derandomize=True, max_examples=25, deadline=None,
                          print_blob=True)
settings.register_profile("thorough", derandomize=False, max_examples=250, deadline=None,
                          print_blob=True)
HYPOTHESIS_PROFILE = os.environ.get("RTF_HYPOTHESIS_PROFILE") or "fixed"
settings.load_profile(HYPOTHESIS_PROFILE)


def pytest_collection_modifyitems(config, items):
    """Mark hypothesis tests ``property`` so one env can run only them;
    on RTF_TEST_DB=galera without Galera installed, skip every test."""
    for item in items:
        if getattr(getattr(item, "obj", None), "is_hypothesis_test", False):
            item.add_marker(pytest.mark.property)
    _skip_without_galera(items)


def pytest_report_header(config):
    return (
        f"rtframework test database: {databases.selected_engine()}, "
        f"placement backend: {os.environ.get('RTF_TEST_BACKEND', 'sql')}, "
        f"hypothesis profile: {HYPOTHESIS_PROFILE}"
    )


@pytest.fixture
def collection_on():
    """Automatic garbage collection on for the test, and as it was before
    once the test ends, whatever the test turned it to."""
    was = gc.isenabled()
    gc.enable()
    yield
    (gc.enable if was else gc.disable)()


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
    this process's database with every row deleted, see databases). At the
    end the usage stored with each inventory must match its allocations."""
    if databases.selected_engine() == "galera":
        yield databases.emptied_galera_database()
        return
    with databases.temporary_database(databases.selected_engine(), str(tmp_path)) as url:
        yield url
        # Every allocation write keeps the usage stored beside the inventory:
        # whatever a test did, the two counts still agree.
        drift = databases.usage_drift(url)
        assert drift == [], f"stored usage differs from the allocations: {drift}"


def _skip_without_galera(items):
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
