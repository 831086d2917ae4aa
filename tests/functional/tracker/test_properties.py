"""Any sequence of claims and periodic runs keeps placement equal to the
records: each host's usage is the sum of its ACTIVE instances' flavors,
gone instances hold nothing, and a periodic run right after another one
writes nothing."""

from __future__ import annotations

import uuid

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rtframework.compute import values as v
from rtframework.compute.values import Flavor
from rtframework.tracker import NoCapacity, TrackerError
from tests.functional.tracker.conftest import boot, usage

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


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
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
        try:
            if op == "boot":
                names.append(boot(rt, f"i{len(names)}-{suffix}", FLAVORS[k % 2]).name)
            elif op == "periodic":
                rt.update_available_resource()
                rt.stats.reset()
                rt.update_available_resource()
                assert rt.stats.writes == 0, rt.stats.by_method
            elif live:
                inst = live[k % len(live)]
                if op == "delete":
                    trackers[0 if inst.host == trackers[0].host else 1].delete(inst.uuid)
                elif op == "shelve" and inst.host == rt.host:
                    rt.shelve_offload(inst.uuid)
                elif op == "unshelve":
                    rt.unshelve(inst.uuid)
                elif op == "local_delete" and inst.vm_state != v.DELETED:
                    # Deleted behind the tracker's back: the next periodic heals it.
                    store.update_instance(inst.uuid, vm_state=v.DELETED, task_state=None)
                    rt_owner = [t for t in trackers if t.host == inst.host]
                    for owner in rt_owner:
                        owner.update_available_resource()
        except (NoCapacity, TrackerError):
            pass  # refusals are fine; what they leave behind is checked below
        for t in trackers:
            assert usage(t) == _expected(store, t.host, names), (op, t.host)
        for inst in store.list_instances(vm_states=list(v.GONE_VM_STATES)):
            if inst.name in names:
                held = trackers[0].backend.wrapped.get_consumer_allocations(inst.uuid)
                assert held.allocations == {}, inst
