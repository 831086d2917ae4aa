"""Any sequence of claims and periodic runs keeps placement equal to the
records: each host's usage is the sum of its ACTIVE instances' flavors,
gone instances hold nothing, and a periodic run right after another one
writes nothing."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rtframework.compute import values as v
from rtframework.compute.values import Flavor
from rtframework.tracker import InvalidInstanceState, NoCapacity
from tests.functional.tracker.conftest import boot, usage

pytestmark = pytest.mark.placement

FLAVORS = [Flavor("one", {"VCPU": 1, "MEMORY_MB": 512}),
           Flavor("big", {"VCPU": 8, "MEMORY_MB": 4096, "DISK_GB": 50})]

OPS = st.lists(st.tuples(
    st.sampled_from(["boot", "delete", "shelve", "unshelve", "periodic", "local_delete"]),
    st.integers(0, 1),  # host
    st.integers(0, 7),  # which instance / which flavor
), min_size=1, max_size=12)


def _expected(store, host, names):
    total: dict[str, int] = {}
    for inst in store.list_instances(host=host, vm_states=[v.ACTIVE]):
        if inst.name in names:
            for rc, n in inst.flavor.resources.items():
                total[rc] = total.get(rc, 0) + n
    return total


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS)
def test_placement_follows_the_records(make_tracker, store, ops):
    suffix = uuid.uuid4().hex[:6]
    trackers = [make_tracker(f"p{i}-{suffix}") for i in range(2)]
    for rt in trackers:
        rt.update_available_resource()
    names: list[str] = []
    for op, h, k in ops:
        rt = trackers[h]
        live = [store.lookup_instance(n) for n in names]
        inst = live[k % len(live)] if live else None
        if op == "boot":
            # The only refusal a boot may give is a full host.
            try:
                names.append(boot(rt, f"i{len(names)}-{suffix}", FLAVORS[k % 2]).name)
            except NoCapacity:
                pass
        elif op == "periodic":
            rt.update_available_resource()
            rt.stats.reset()
            rt.update_available_resource()
            assert rt.stats.writes == 0, rt.stats.by_method
        elif inst is None:
            pass
        elif op == "delete":
            owner = trackers[0 if inst.host == trackers[0].host else 1]
            if inst.vm_state == v.DELETED:
                with pytest.raises(InvalidInstanceState, match="already deleted"):
                    owner.delete(inst.uuid)
            else:
                assert owner.delete(inst.uuid).vm_state == v.DELETED
        elif op == "shelve" and inst.host == rt.host:
            if inst.vm_state == v.ACTIVE:
                assert rt.shelve_offload(inst.uuid).vm_state == v.SHELVED_OFFLOADED
            else:
                with pytest.raises(InvalidInstanceState, match="only an ACTIVE idle"):
                    rt.shelve_offload(inst.uuid)
        elif op == "unshelve":
            if inst.vm_state != v.SHELVED_OFFLOADED:
                with pytest.raises(InvalidInstanceState, match="only a SHELVED_OFFLOADED"):
                    rt.unshelve(inst.uuid)
            else:
                try:
                    assert rt.unshelve(inst.uuid).vm_state == v.ACTIVE
                except NoCapacity:
                    after = store.get_instance(inst.uuid)
                    assert (after.vm_state, after.host, after.task_state) == (
                        v.SHELVED_OFFLOADED, None, None)
        elif op == "local_delete" and inst.vm_state != v.DELETED:
            # Deleted behind the tracker's back: the next periodic heals it.
            store.update_instance(inst.uuid, vm_state=v.DELETED, task_state=None)
            for owner in [t for t in trackers if t.host == inst.host]:
                owner.update_available_resource()
        for t in trackers:
            assert usage(t) == _expected(store, t.host, names), (op, t.host)
        for inst in store.list_instances(vm_states=list(v.GONE_VM_STATES)):
            if inst.name in names:
                held = trackers[0].backend.wrapped.get_consumer_allocations(inst.uuid)
                assert held.allocations == {}, inst
