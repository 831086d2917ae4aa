"""Hosts with the fake driver, a tracker each, on one test database.

The placement backend is the one RTF_TEST_BACKEND selects, empty
(``fresh_backend``): these tests name their hosts "h1", "h2" as a fresh
cloud would.
"""

from __future__ import annotations

import pytest

from rtframework.compute.values import Flavor
from rtframework.tracker import ResourceTracker
from rtframework_drivers.fake.driver import FakeDriver
from tests.functional.conftest import store  # noqa: F401 - importable from here too

SMALL = Flavor("small", {"VCPU": 2, "MEMORY_MB": 1024, "DISK_GB": 10})


@pytest.fixture
def backend(fresh_backend):
    return fresh_backend


@pytest.fixture
def make_tracker(conf, config, store, backend):  # noqa: F811 - the fixture
    """make_tracker(host) -> a ResourceTracker over a FakeDriver of ``host``."""
    FakeDriver.register_opts(conf)
    config.config(vcpus=8, memory_mb=8192, disk_gb=100, group="fake_driver")
    config.config(reserved_host_memory_mb=0)

    def make(host: str = "h1") -> ResourceTracker:
        return ResourceTracker(conf, host, FakeDriver(conf, host), backend, store)

    return make


@pytest.fixture
def tracker(make_tracker):
    rt = make_tracker("h1")
    rt.update_available_resource()
    return rt


def boot(rt: ResourceTracker, name: str = "vm", flavor: Flavor = SMALL, **kw):
    return rt.boot(name, flavor, project_id="proj", user_id="user", **kw)


def usage(rt: ResourceTracker, node: str | None = None) -> dict[str, int]:
    """Non-zero usages of a node's root provider."""
    root = rt.node_root_uuid(node or rt.host)
    return {rc: n for rc, n in rt.backend.wrapped.get_provider_usages(root).items() if n}
