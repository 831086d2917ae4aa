"""The heal rules, as a table, on the engine RTF_TEST_DB selects."""

from __future__ import annotations

import uuid

import pytest

from rtframework.compute import values as v
from rtframework.compute.values import Flavor
from tests.functional.tracker.conftest import SMALL

pytestmark = pytest.mark.placement

RES = dict(SMALL.resources)


@pytest.fixture
def cloud(make_tracker):
    """Trackers of hosts h1 and h2, both reported."""
    trackers = {h: make_tracker(h) for h in ("h1", "h2")}
    for rt in trackers.values():
        rt.update_available_resource()
    return trackers


def _instance(store, host, vm_state, task_state=None):
    return store.create_instance("vm", SMALL, project_id="proj", user_id="user", host=host,
                                 node=host, vm_state=vm_state, task_state=task_state)


def _allocate(cloud, consumer, hosts):
    backend = cloud["h1"].backend.wrapped
    backend.put_allocations(
        consumer, {cloud[h].node_root_uuid(h): RES for h in hosts},
        project_id="proj", user_id="user", consumer_generation=None)


def _held_hosts(cloud, consumer):
    held = cloud["h1"].backend.wrapped.get_consumer_allocations(consumer).allocations
    by_root = {rt.node_root_uuid(h): h for h, rt in cloud.items()}
    return sorted(by_root[p] for p in held)


def _owned(vm_state, task_state=None):
    def setup(cloud, store):
        return _instance(store, "h1", vm_state, task_state).uuid, ["h1"]
    return setup


def _not_owned(cloud, store):
    # Owned by h2 and gone there: only h2 may remove it, even from h1.
    return _instance(store, "h2", v.DELETED).uuid, ["h1", "h2"]


def _moving_task_state(cloud, store):
    return _instance(store, "h1", v.ACTIVE, "resize_migrating").uuid, ["h1", "h2"]


def _moving_migration_record(cloud, store):
    inst = _instance(store, "h1", v.ACTIVE)
    store.create_migration(inst.uuid, "migration", source_host="h1", source_node="h1",
                           dest_host="h2", dest_node="h2", old_flavor=SMALL,
                           status="migrating")
    return inst.uuid, ["h1", "h2"]


def _deleted_mid_move(cloud, store):
    # Deleted while a migration record is still unfinished: the move's
    # clean-up owns it, the heal must not race it.
    inst = _instance(store, "h1", v.DELETED)
    store.create_migration(inst.uuid, "resize", source_host="h1", source_node="h1",
                           dest_host="h2", dest_node="h2", old_flavor=SMALL,
                           new_flavor=Flavor("big", RES), status="finished")
    return inst.uuid, ["h1", "h2"]


def _migration_consumer(cloud, store):
    inst = _instance(store, "h2", v.RESIZED, "resize_finish")
    mig = store.create_migration(inst.uuid, "resize", source_host="h1", source_node="h1",
                                 dest_host="h2", dest_node="h2", old_flavor=SMALL,
                                 status="finished")
    return mig.uuid, ["h1"]


def _unknown_consumer(cloud, store):
    return str(uuid.uuid4()), ["h1"]


def _deleted_elsewhere_only(cloud, store):
    # Owned by h1 and deleted, but holding nothing on h1: not h1's business.
    return _instance(store, "h1", v.DELETED).uuid, ["h2"]


HEAL_TABLE = [
    # id, setup, hosts held after h1's heal, audit finding h1 records
    ("owned+DELETED", _owned(v.DELETED), [], None),
    ("owned+SHELVED_OFFLOADED", _owned(v.SHELVED_OFFLOADED), [], None),
    ("owned+ACTIVE", _owned(v.ACTIVE), ["h1"], None),
    ("owned+BUILDING", _owned(v.BUILDING), ["h1"], None),
    ("owned+ERROR", _owned(v.ERROR), ["h1"], None),
    ("owned+DELETED but task_state set", _owned(v.DELETED, "rebuilding"), ["h1"], None),
    ("not owned", _not_owned, ["h1", "h2"], None),
    ("moving: task_state", _moving_task_state, ["h1", "h2"], None),
    ("moving: migration record", _moving_migration_record, ["h1", "h2"], None),
    ("deleted mid-move", _deleted_mid_move, ["h1", "h2"], None),
    ("migration consumer", _migration_consumer, ["h1"], None),
    ("unknown consumer", _unknown_consumer, ["h1"], "unknown_consumer"),
    ("nothing on this host", _deleted_elsewhere_only, ["h2"], None),
]


@pytest.mark.parametrize("setup,held_after,finding", [c[1:] for c in HEAL_TABLE],
                         ids=[c[0] for c in HEAL_TABLE])
def test_heal_table(cloud, store, setup, held_after, finding):
    consumer, hosts = setup(cloud, store)
    _allocate(cloud, consumer, hosts)
    report = cloud["h1"].update_available_resource()[0]
    assert _held_hosts(cloud, consumer) == held_after
    assert (consumer in report.healed) == (held_after != hosts)
    kinds = [f.kind for f in store.list_audit_findings(host="h1", consumer_uuid=consumer)]
    assert kinds == ([finding] if finding else [])


def test_local_delete_is_healed_on_the_next_run(cloud, store):
    inst = _instance(store, "h1", v.ACTIVE)
    _allocate(cloud, inst.uuid, ["h1"])
    cloud["h1"].update_available_resource()
    assert _held_hosts(cloud, inst.uuid) == ["h1"]
    # Deleted without the tracker (the API marked it while the agent ran).
    store.update_instance(inst.uuid, vm_state=v.DELETED)
    report = cloud["h1"].update_available_resource()[0]
    assert report.healed == (inst.uuid,)
    assert _held_hosts(cloud, inst.uuid) == []


def test_instance_on_two_nodes_not_moving_is_reported_once(cloud, store, caplog):
    inst = _instance(store, "h1", v.ACTIVE)
    _allocate(cloud, inst.uuid, ["h1", "h2"])
    with caplog.at_level("WARNING", logger="rtframework.tracker"):
        cloud["h1"].update_available_resource()
        cloud["h1"].update_available_resource()
    assert _held_hosts(cloud, inst.uuid) == ["h1", "h2"]
    findings = store.list_audit_findings(consumer_uuid=inst.uuid, kind="multi_node")
    assert [f.host for f in findings] == ["h1"]
    assert "2 compute nodes" in findings[0].detail
    assert sum(inst.uuid in r.getMessage() for r in caplog.records) == 1


class _MovesMeanwhile:
    """A backend wrapper: just before the heal's first consumer read, another
    host starts a move of the instance and rewrites its allocations."""

    def __init__(self, backend, store, instance_uuid, other_root):
        self._backend, self._store = backend, store
        self._instance, self._other_root = instance_uuid, other_root
        self.raced = False

    def __getattr__(self, name):
        return getattr(self._backend, name)

    def write_allocations(self, writes):
        if not self.raced and any(w.consumer_uuid == self._instance for w in writes):
            self.raced = True
            self._store.update_instance(self._instance, task_state="migrating")
            held = self._backend.get_consumer_allocations(self._instance)
            self._backend.put_allocations(
                self._instance, {**held.allocations, self._other_root: RES},
                project_id="proj", user_id="user", consumer_generation=held.generation)
        return self._backend.write_allocations(writes)


def test_lost_race_re_reads_and_re_decides(make_tracker, store, backend, conf):
    from rtframework.tracker import ResourceTracker

    h2 = make_tracker("h2")
    h2.update_available_resource()
    inst = _instance(store, "h1", v.DELETED)
    first = make_tracker("h1")
    first.update_available_resource()
    racing = _MovesMeanwhile(backend, store, inst.uuid, h2.node_root_uuid("h2"))
    rt = ResourceTracker(conf, "h1", first.driver, racing, store)
    rt.update_available_resource()
    backend.put_allocations(inst.uuid, {rt.node_root_uuid("h1"): RES}, project_id="proj",
                            user_id="user", consumer_generation=None)
    report = rt.update_available_resource()[0]
    assert racing.raced
    assert rt.stats.conflicts == 1
    assert report.healed == ()
    held = backend.get_consumer_allocations(inst.uuid).allocations
    assert set(held) == {rt.node_root_uuid("h1"), h2.node_root_uuid("h2")}



def test_consumer_holding_only_a_child_class_is_healed(make_tracker, config, store):
    # A write bumps only the providers it touches: a boot that takes just a
    # child's class leaves the root's generation alone, and the quiet pass
    # must still notice it.
    config.config(child_resource_class="CUSTOM_FPGA", child_total=2, group="fake_driver")
    rt = make_tracker("h1")
    rt.update_available_resource()
    rt.update_available_resource()
    vm = rt.boot("fpga-only", Flavor("fpga", {"CUSTOM_FPGA": 1}), project_id="proj",
                 user_id="user")
    rt.update_available_resource()
    store.update_instance(vm.uuid, vm_state=v.DELETED)
    rt.stats.reset()
    report = rt.update_available_resource()[0]
    assert report.healed == (vm.uuid,)
    assert rt.backend.wrapped.get_consumer_allocations(vm.uuid).allocations == {}


def test_quiet_pass_reads_once_with_a_child_in_use(make_tracker, config):
    config.config(child_resource_class="CUSTOM_FPGA", child_total=2, group="fake_driver")
    rt = make_tracker("h1")
    rt.update_available_resource()
    rt.boot("fpga-only", Flavor("fpga", {"CUSTOM_FPGA": 1}), project_id="proj",
            user_id="user")
    rt.update_available_resource()
    rt.stats.reset()
    rt.update_available_resource()
    assert rt.stats.writes == 0, rt.stats.by_method
    assert rt.stats.reads == 1, rt.stats.by_method


def test_a_pass_with_findings_reads_their_allocations_at_once(make_tracker, backend):
    rt = make_tracker("h1")
    rt.update_available_resource()
    root = rt.node_root_uuid("h1")
    strays = [str(uuid.uuid4()) for _ in range(3)]
    for stray in strays:
        backend.put_allocations(stray, {root: {"VCPU": 1}}, project_id="p", user_id="u",
                                consumer_generation=None)
    rt.update_available_resource()
    rt.stats.reset()
    report = rt.update_available_resource()[0]
    assert sorted(report.findings) == sorted(f"{s}: unknown_consumer" for s in strays)
    # The listing of the tree, then the three consumers in one call.
    assert rt.stats.reads == 2, rt.stats.by_method
    assert rt.stats.by_method["get_consumers_allocations"] == 1
    assert rt.stats.writes == 0
