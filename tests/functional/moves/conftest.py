"""A small cloud for move tests: hosts, instances, snapshots of placement.

The placement backend is the one RTF_TEST_BACKEND selects (the same
``backend`` fixture as the contract suite), so these tests also run
against a real OpenStack Placement. Names and uuids are fresh per test
because such a service outlives the test.
"""

from __future__ import annotations

import uuid

import pytest

from rtframework.compute import values as v
from rtframework.compute.store import ComputeStore
from rtframework.moves.common import MoveContext
from rtframework.placement import types as t
from tests.functional.placement.conftest import backend, sql_backend  # noqa: F401

PROJECT, USER = "proj", "user"


class Cloud:
    """Hosts with one node each, reported to placement and the records."""

    def __init__(self, conf, backend, store):  # noqa: F811 - the fixture's value
        self.conf = conf
        self.backend = backend
        self.store = store
        self.suffix = uuid.uuid4().hex[:8]
        self.roots: dict[str, str] = {}  # host -> root provider uuid
        self.ctx = MoveContext(conf, backend, store)

    def add_host(self, host: str, vcpus: int = 8, memory_mb: int = 8192, disk_gb: int = 100):
        rp = self.backend.create_provider(f"{host}-{self.suffix}")
        self.backend.set_inventories(rp.uuid, rp.generation, {
            "VCPU": t.Inventory(total=vcpus),
            "MEMORY_MB": t.Inventory(total=memory_mb),
            "DISK_GB": t.Inventory(total=disk_gb),
        })
        self.store.record_compute_node(rp.uuid, host, host, "fake")
        self.store.heartbeat(host)
        self.roots[host] = rp.uuid
        return rp.uuid

    def boot(self, host: str, resources: dict[str, int], name: str = "vm") -> v.Instance:
        instance = self.store.create_instance(
            name, v.Flavor("f", resources), project_id=PROJECT, user_id=USER,
            host=host, node=host, vm_state=v.ACTIVE)
        self.backend.put_allocations(instance.uuid, {self.roots[host]: resources},
                                     project_id=PROJECT, user_id=USER, consumer_generation=None)
        return instance

    def periodic(self, host: str) -> None:
        """The host's periodic resource update (its heal included)."""

    def usages(self) -> dict[str, dict[str, int]]:
        """host -> class -> amount used, without zeros."""
        out = {}
        for host, root in self.roots.items():
            out[host] = {rc: n for rc, n in self.backend.get_provider_usages(root).items() if n}
        return out

    def allocations(self, consumer: str) -> dict[str, dict[str, int]]:
        """host -> class -> amount a consumer holds."""
        by_root = {r: h for h, r in self.roots.items()}
        held = self.backend.get_consumer_allocations(consumer).allocations
        return {by_root.get(p, p): dict(res) for p, res in held.items()}


@pytest.fixture
def store(conf, config, database_url):
    config.config(connection=database_url, group="database")
    s = ComputeStore.from_conf(conf)
    yield s
    s.close()


@pytest.fixture
def cloud(conf, config, backend, store):  # noqa: F811
    return Cloud(conf, backend, store)
