"""A move recorded before the compute schema kept both halves of its claim
(0003): confirm and revert work it out from the flavors and the node
trees, children included; and the refusals of a move step named by a
wrong or unknown migration."""

from __future__ import annotations

import uuid

import pytest

from rtframework import invariants
from rtframework.compute import values as v
from rtframework.moves import errors, evacuate, live, resize

OLD = {"VCPU": 1, "MEMORY_MB": 512, "VGPU": 1}
NEW = {"VCPU": 2, "MEMORY_MB": 1024, "VGPU": 1}


@pytest.fixture
def gpu_cloud(cloud, config):
    config.config(gpus=1, vgpus_per_gpu=2, group="fake_driver")
    for label in ("a", "b"):
        cloud.add_host(label)
    return cloud


def _finished_legacy_resize(cloud, strategy, config):
    config.config(move_claim_strategy=strategy, group="placement")
    vm = cloud.trackers["a"].boot("vm", v.Flavor("old", OLD), project_id="proj", user_id="user")
    migration = resize.run(cloud.ctx, vm.uuid, v.Flavor("new", NEW), to_host=cloud.host("b"))
    assert migration.status == "finished"
    # What a record written before schema 0003 looks like.
    legacy = cloud.store.update_migration(migration.uuid, source_allocations=None,
                                          dest_allocations=None)
    assert (legacy.source_allocations, legacy.dest_allocations) == (None, None)
    return vm, migration


def _gpu_of(cloud, label):
    root = cloud.root(label)
    return {p.uuid for p in cloud.backend.list_providers() if p.root_uuid == root} - {root}


@pytest.mark.parametrize("strategy", ["doubled", "migration"])
def test_revert_of_a_legacy_record_gives_the_source_back(gpu_cloud, config, strategy):
    cloud = gpu_cloud
    vm, migration = _finished_legacy_resize(cloud, strategy, config)
    resize.revert(cloud.ctx, migration.uuid)
    held = cloud.backend.get_consumer_allocations(vm.uuid).allocations
    (gpu,) = _gpu_of(cloud, "a")
    assert dict(held) == {cloud.root("a"): {"VCPU": 1, "MEMORY_MB": 512}, gpu: {"VGPU": 1}}
    assert cloud.allocations(migration.uuid) == {}
    assert cloud.store.get_instance(vm.uuid).host == cloud.host("a")
    assert invariants.check(cloud.backend, cloud.store, recheck_delay=-1) == []


@pytest.mark.parametrize("strategy", ["doubled", "migration"])
def test_confirm_of_a_legacy_record_keeps_the_destination(gpu_cloud, config, strategy):
    cloud = gpu_cloud
    vm, migration = _finished_legacy_resize(cloud, strategy, config)
    resize.confirm(cloud.ctx, migration.uuid)
    assert cloud.allocations(vm.uuid) == {"b": NEW}
    assert cloud.allocations(migration.uuid) == {}
    assert cloud.usages()["a"] == {}
    assert invariants.check(cloud.backend, cloud.store, recheck_delay=-1) == []


def test_a_step_of_another_kind_of_move_is_refused(gpu_cloud):
    cloud = gpu_cloud
    vm = cloud.trackers["a"].boot("vm", v.Flavor("old", OLD), project_id="proj", user_id="user")
    migration = resize.run(cloud.ctx, vm.uuid, v.Flavor("new", NEW), to_host=cloud.host("b"))
    with pytest.raises(errors.MoveError) as exc:
        live.complete(cloud.ctx, migration.uuid)
    assert str(exc.value) == f"migration {migration.uuid} is a resize, not a live-migration"
    with pytest.raises(errors.MoveError) as exc:
        evacuate.rebuild(cloud.ctx, migration.uuid)
    assert str(exc.value) == f"migration {migration.uuid} is a resize, not an evacuation"
    unknown = str(uuid.uuid4())
    with pytest.raises(errors.MoveError, match=unknown):
        resize.confirm(cloud.ctx, unknown)
    assert cloud.store.get_migration(migration.uuid).status == "finished"
