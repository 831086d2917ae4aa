"""The fight this project exists to end, re-created and caught.

The old heal removed every allocation on a host's providers of a consumer
the host did not think it ran. During a move that is exactly the other
host's half. The invariant check names what went missing; the real
tracker's heal, run at the same moments, leaves the move alone.
"""

from __future__ import annotations

import pytest

from rtframework import invariants
from rtframework.moves import migrate, resize

pytestmark = pytest.mark.placement

F = {"VCPU": 2, "MEMORY_MB": 1024, "DISK_GB": 10}


def naive_heal(cloud, label: str) -> list[str]:
    """The old rule; returns the consumers it removed."""
    host = cloud.host(label)
    runs = {i.uuid for i in cloud.store.list_instances(host=host)}
    removed = []
    for consumer in cloud.backend.get_provider_allocations(cloud.root(label)):
        if consumer not in runs:
            cloud.backend.delete_allocations(consumer)
            removed.append(consumer)
    return removed


@pytest.fixture(params=["doubled", "migration"])
def moving(request, cloud, config):
    """An instance half-way through a cold migration from a to b."""
    config.config(move_claim_strategy=request.param, group="placement")
    cloud.add_host("a")
    cloud.add_host("b")
    vm = cloud.boot("a", F)
    mig = resize.migrate(cloud.ctx, migrate.start(cloud.ctx, vm.uuid, to_host=cloud.host("b")).uuid)
    return cloud, vm, mig


def findings(cloud):
    return cloud.violations()


def test_naive_heal_on_the_destination_removes_its_claim_and_the_audit_says_so(moving):
    cloud, vm, mig = moving
    assert findings(cloud) == []
    assert naive_heal(cloud, "b") == [vm.uuid]
    missing = [f for f in findings(cloud) if f.kind == invariants.MISSING_MOVE_CLAIM]
    assert cloud.root("b") in {f.provider_uuid for f in missing}
    assert all(mig.uuid in f.detail for f in missing)
    assert vm.uuid in str(missing[0]) or mig.uuid in str(missing[0])


def test_the_real_heal_on_either_host_leaves_the_move_alone(moving):
    cloud, vm, mig = moving
    before = (cloud.allocations(vm.uuid), cloud.allocations(mig.uuid))
    for label in ("b", "a", "b"):
        cloud.periodic(label)
    assert (cloud.allocations(vm.uuid), cloud.allocations(mig.uuid)) == before
    assert findings(cloud) == []


def test_naive_heal_on_the_source_after_finish_removes_the_source_half(moving):
    cloud, vm, mig = moving
    resize.finish(cloud.ctx, mig.uuid)  # the instance now lives on b
    assert naive_heal(cloud, "a")
    missing = [f for f in findings(cloud) if f.kind == invariants.MISSING_MOVE_CLAIM]
    assert cloud.root("a") in {f.provider_uuid for f in missing}


def test_a_confirm_leaves_no_migration_consumer_for_the_audit(moving):
    cloud, vm, mig = moving
    resize.finish(cloud.ctx, mig.uuid)
    resize.confirm(cloud.ctx, mig.uuid)
    assert findings(cloud) == []
    # A leaked migration consumer would be reported by kind.
    cloud.backend.put_allocations(mig.uuid, {cloud.root("b"): {"VCPU": 1}},
                                  project_id="proj", user_id="user", consumer_generation=None,
                                  consumer_type="MIGRATION")
    assert [f.kind for f in findings(cloud)] == [invariants.LEAKED_MIGRATION_CONSUMER]
