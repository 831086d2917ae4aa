"""A small cloud for move tests: fake-driver hosts, each with its tracker.

The placement backend is the one RTF_TEST_BACKEND selects (the same
``backend`` fixture as the contract suite), so these tests also run
against a real OpenStack Placement. Such a service outlives the test, so
host names (and with them node names and provider uuids) are fresh per
test; tests speak of hosts by label ("a", "b") and the cloud maps them.
"""

from __future__ import annotations

import os
import uuid

import pytest

from rtframework import db, invariants
from rtframework.compute import values as v
from rtframework.compute.store import ComputeStore
from rtframework.moves.context import MoveContext
from rtframework.placement import types as t
from rtframework.placement.sql.backend import SQLBackend
from rtframework.tracker import ResourceTracker
from rtframework_drivers.fake.driver import FakeDriver
from tests.fixtures import databases
from tests.functional.placement.conftest import backend, sql_backend  # noqa: F401

PROJECT, USER = "proj", "user"
# A real Placement is shared with other tests: there only this cloud's own
# trees (and the pools serving them) can be judged.
WHOLE_PLACEMENT_IS_OURS = os.environ.get("RTF_TEST_BACKEND", "sql") == "sql"


class Cloud:
    """Hosts with one fake node each, reported by their own tracker."""

    def __init__(self, conf, backend, store, node_urls=()):  # noqa: F811 - the fixture's value
        self.conf = conf
        self.backend = backend
        self.store = store
        # On a database cluster: one URL per node; each host's tracker
        # writes through its own node, the moves through ``backend``'s.
        self.node_urls = list(node_urls)
        self.opened: list = []
        self.suffix = uuid.uuid4().hex[:8]
        self.trackers: dict[str, ResourceTracker] = {}  # label -> tracker
        self.ctx = MoveContext(conf, backend, store, drivers={})

    def host(self, label: str) -> str:
        return f"{label}-{self.suffix}"

    def label(self, host: str | None) -> str | None:
        return None if host is None else host.rsplit("-", 1)[0]

    def root(self, label: str) -> str:
        return self.trackers[label].node_root_uuid(self.host(label))

    def add_host(self, label: str) -> ResourceTracker:
        host = self.host(label)
        host_backend, host_store = self._host_databases()
        tracker = ResourceTracker(self.conf, host, FakeDriver(self.conf, host), host_backend,
                                  host_store)
        tracker.update_available_resource()
        self.trackers[label] = tracker
        self.ctx.drivers[host] = tracker.driver
        return tracker

    def _host_databases(self):
        if not self.node_urls:
            return self.backend, self.store
        url = self.node_urls[len(self.trackers) % len(self.node_urls)]
        group = "placement_database"
        shared = self.conf[group].connection
        self.conf.set_override("connection", url, group=group)
        try:
            backend = SQLBackend(self.conf)
        finally:
            self.conf.set_override("connection", shared, group=group)
        store = ComputeStore(db.create_engine(url))
        self.opened += [backend, store]
        return backend, store

    def close(self) -> None:
        for opened in self.opened:
            opened.close()

    def boot(self, label: str, resources: dict[str, int], name: str = "vm") -> v.Instance:
        return self.trackers[label].boot(name, v.Flavor("f", resources),
                                         project_id=PROJECT, user_id=USER)

    def periodic(self, label: str) -> None:
        """The host's periodic resource update (its heal included)."""
        self.trackers[label].update_available_resource()

    def _labels(self) -> dict[str, str]:
        """provider uuid -> host label, for every provider of each host's tree."""
        found = {}
        for label in self.trackers:
            for provider in self.backend.list_providers(t.ProviderQuery(in_tree=self.root(label))):
                found[provider.uuid] = label
        return found

    def usages(self) -> dict[str, dict[str, int]]:
        """host label -> class -> amount used on the host's tree, without zeros."""
        out: dict[str, dict[str, int]] = {label: {} for label in self.trackers}
        for provider, label in self._labels().items():
            for rc, n in self.backend.get_provider_usages(provider).items():
                if n:
                    out[label][rc] = out[label].get(rc, 0) + n
        return out

    def allocations(self, consumer: str) -> dict[str, dict[str, int]]:
        """host label -> class -> amount a consumer holds on the host's tree
        (other providers by uuid)."""
        labels = self._labels()
        held = self.backend.get_consumer_allocations(consumer).allocations
        out: dict[str, dict[str, int]] = {}
        for provider, resources in held.items():
            slot = out.setdefault(labels.get(provider, provider), {})
            for rc, n in resources.items():
                slot[rc] = slot.get(rc, 0) + n
        return out

    def violations(self) -> list[invariants.Violation]:
        """What ``rtf check`` finds now, in one pass (the independent
        checker: every invariant, judged by the reference model)."""
        return invariants.check(self.backend, self.store, recheck_delay=-1,
                                own_trees_only=not WHOLE_PLACEMENT_IS_OURS)

    def running(self, label: str) -> set[str]:
        """Instances the host's hypervisor runs."""
        return set(self.trackers[label].driver.list_instances())


@pytest.fixture
def cloud(conf, config, backend, store):  # noqa: F811
    FakeDriver.register_opts(conf)
    config.config(vcpus=8, memory_mb=8192, disk_gb=100, group="fake_driver")
    config.config(reserved_host_memory_mb=0)
    nodes = databases.cluster_node_urls(store.engine.url.database)
    c = Cloud(conf, backend, store, nodes)
    yield c
    c.close()
