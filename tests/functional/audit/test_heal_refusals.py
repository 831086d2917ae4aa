"""``rtf heal`` and ``rtf audit --delete`` when the repair cannot be made:
each says why in its action, writes nothing, and leaves the finding for
``rtf check`` to report again."""

from __future__ import annotations

import uuid

from rtframework import audit, invariants
from rtframework.compute import values as v
from tests.functional.moves.conftest import PROJECT, USER, cloud  # noqa: F401 - the fixture
from tests.functional.placement.conftest import backend, sql_backend  # noqa: F401


def _heal(cloud):  # noqa: F811
    return audit.heal(cloud.backend, cloud.store, recheck_delay=-1)


def _kinds(cloud, consumer):  # noqa: F811
    return [f.kind for f in invariants.check(cloud.backend, cloud.store, recheck_delay=-1)
            if f.consumer_uuid == consumer]


def test_heal_of_an_instance_whose_node_is_gone_writes_nothing(cloud):  # noqa: F811
    cloud.add_host("a")
    vm = cloud.boot("a", {"VCPU": 1, "MEMORY_MB": 256})
    cloud.backend.delete_allocations(vm.uuid)
    cloud.store.delete_compute_node(cloud.store.node_root_uuid(vm.host, vm.node))
    (action,) = _heal(cloud)
    assert (action.consumer_uuid, action.done, action.allocations) == (vm.uuid, False, {})
    assert action.detail.startswith(f"cannot heal on {vm.host}/{vm.node}: ")
    assert cloud.allocations(vm.uuid) == {}


def test_heal_of_a_flavor_the_node_does_not_offer_says_no_room(cloud):  # noqa: F811
    cloud.add_host("a")
    vm = cloud.boot("a", {"VCPU": 1, "MEMORY_MB": 256})
    cloud.backend.ensure_resource_class("CUSTOM_GPU")
    cloud.backend.delete_allocations(vm.uuid)
    cloud.store.update_instance(vm.uuid, flavor=v.Flavor("gpu", {"VCPU": 1, "CUSTOM_GPU": 1}))
    (action,) = _heal(cloud)
    assert action.done is False
    assert action.detail == (f"node {vm.host}/{vm.node} has no room for flavor gpu "
                             "{'VCPU': 1, 'CUSTOM_GPU': 1}")
    assert cloud.allocations(vm.uuid) == {}
    assert _kinds(cloud, vm.uuid) == [invariants.MISSING_ALLOCATION]


def test_heal_refused_by_placement_on_a_full_node_is_reported(cloud):  # noqa: F811
    cloud.add_host("a")
    vm = cloud.boot("a", {"VCPU": 4, "MEMORY_MB": 256})
    cloud.backend.delete_allocations(vm.uuid)
    # Others take the room the instance lost (max_unit 8 a consumer).
    root = cloud.root("a")
    inv = cloud.backend.get_inventories(root).inventories["VCPU"]
    others = [str(uuid.uuid4()) for _ in range(int(inv.capacity) // inv.max_unit)]
    for other in others:
        cloud.backend.put_allocations(other, {root: {"VCPU": inv.max_unit}}, project_id=PROJECT,
                                      user_id=USER, consumer_generation=None)
    try:
        (action,) = _heal(cloud)
        assert action.done is False
        assert action.detail.startswith("refused: capacity exceeded")
        assert cloud.allocations(vm.uuid) == {}
    finally:
        for other in others:
            cloud.backend.delete_allocations(other)


def test_audit_delete_reads_the_record_again_before_it_removes(cloud, monkeypatch):  # noqa: F811
    """An orphan finding that is stale by the time audit --delete acts (the
    instance record exists now): nothing is removed."""
    cloud.add_host("a")
    vm = cloud.boot("a", {"VCPU": 1, "MEMORY_MB": 256})
    stale = invariants.Violation(invariants.ORPHAN, vm.uuid, None, "orphan (stale read)")
    (action,) = audit.delete_orphans(cloud.backend, cloud.store, [stale])
    assert (action.done, action.detail) == (
        False, "may hold allocations again (record changed)")
    assert cloud.allocations(vm.uuid) == {"a": {"VCPU": 1, "MEMORY_MB": 256}}
