"""``rtf heal`` on hosts whose disk comes from a shared storage pool: the
flavor is whole on the node's tree and the pool serving it."""

from __future__ import annotations

import uuid

from rtframework import audit, invariants, sharing
from rtframework.placement import types as t
from tests.functional.moves.conftest import cloud  # noqa: F401 - the fixture
from tests.functional.placement.conftest import backend, sql_backend  # noqa: F401

F = {"VCPU": 2, "MEMORY_MB": 1024, "DISK_GB": 10}


def test_heal_writes_the_flavor_back_with_its_disk_on_the_pool(cloud, config):  # noqa: F811
    aggregate = str(uuid.uuid4())
    config.config(shared_storage_aggregate=aggregate, group="fake_driver")
    pool = sharing.ensure_pool(cloud.backend, f"pool-{cloud.suffix}", aggregate,
                               {"DISK_GB": t.Inventory(total=100)})
    cloud.add_host("a")
    vm = cloud.boot("a", F)
    booted = cloud.allocations(vm.uuid)
    assert booted[pool] == {"DISK_GB": 10}
    # Nothing to do while it holds its flavor (disk on the pool included).
    assert [a.done for a in audit.heal(cloud.backend, cloud.store, recheck_delay=-1)] == []
    cloud.backend.delete_allocations(vm.uuid)
    (action,) = audit.heal(cloud.backend, cloud.store, recheck_delay=-1)
    assert action.done, action.detail
    assert cloud.allocations(vm.uuid) == booted
    assert invariants.check(cloud.backend, cloud.store, recheck_delay=-1) == []
