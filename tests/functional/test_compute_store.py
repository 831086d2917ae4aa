"""The compute records on the engine RTF_TEST_DB selects."""

from __future__ import annotations

import datetime

import pytest
import sqlalchemy as sa
from alembic.script import ScriptDirectory

from rtframework import db
from rtframework.compute import errors
from rtframework.compute import store as store_mod
from rtframework.compute import values as v
from rtframework.compute.store import ComputeStore
from rtframework.compute.values import Flavor

SMALL = Flavor("small", {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 20})
LARGE = Flavor("large", {"VCPU": 4, "MEMORY_MB": 4096, "DISK_GB": 40})


def _boot(store, name="vm1", host="h1", **kw):
    return store.create_instance(name, SMALL, project_id="p", user_id="u", host=host,
                                 node=host, **kw)


def test_auto_sync_creates_schema_at_head_and_sync_is_idempotent(store, conf):
    head = ScriptDirectory(store_mod.SCRIPT_LOCATION).get_current_head()
    assert head is not None
    assert store_mod.sync_schema(conf) == (head, head)
    tables = set(sa.inspect(store.engine).get_table_names())
    assert {"instances", "migrations", "compute_nodes", "services", "audit_findings",
            "compute_alembic_version"} <= tables


def test_no_auto_sync_refuses_an_empty_database_naming_the_fix(conf, config, database_url):
    config.config(connection=database_url, auto_sync=False, group="database")
    with pytest.raises(db.SchemaNotCurrent) as caught:
        ComputeStore.from_conf(conf)
    assert str(caught.value).endswith("has no schema and auto_sync is off: run `rtf db sync`")
    assert "\n" not in str(caught.value)
    engine = sa.create_engine(database_url)
    try:
        assert sa.inspect(engine).get_table_names() == []
    finally:
        engine.dispose()


def test_instance_round_trip_keeps_flavor_resources(store):
    created = _boot(store)
    got = store.get_instance(created.uuid)
    assert got == created
    assert got.flavor == SMALL
    assert got.vm_state == v.BUILDING and got.task_state is None
    assert got.created_at.tzinfo is not None
    assert store.instance_flavor(created.uuid).resources["MEMORY_MB"] == 2048


def test_update_instance_changes_fields_and_flavor(store):
    inst = _boot(store)
    updated = store.update_instance(inst.uuid, vm_state=v.ACTIVE, flavor=LARGE,
                                    task_state="resize_migrating")
    assert updated.vm_state == v.ACTIVE
    assert store.get_instance(inst.uuid).flavor == LARGE
    assert store.get_instance(inst.uuid).task_state == "resize_migrating"


def test_compare_and_swap_lets_only_one_host_act(store):
    inst = _boot(store)
    store.update_instance(inst.uuid, expected_task_state=None, expected_host="h1",
                          task_state="migrating")
    with pytest.raises(errors.StateConflict, match="task_state expected None but is 'migrating'"):
        store.update_instance(inst.uuid, expected_task_state=None, task_state="rebuilding")
    assert store.get_instance(inst.uuid).task_state == "migrating"


def test_compare_and_swap_accepts_a_collection_of_states(store):
    inst = _boot(store)
    store.update_instance(inst.uuid, expected_vm_state=(v.BUILDING, v.ACTIVE),
                          expected_task_state={None, "migrating"}, vm_state=v.ERROR)
    with pytest.raises(errors.StateConflict, match="vm_state"):
        store.update_instance(inst.uuid, expected_vm_state=[v.BUILDING, v.ACTIVE],
                              vm_state=v.DELETED)
    assert store.get_instance(inst.uuid).vm_state == v.ERROR


def test_update_unknown_instance_or_field_or_state_is_refused(store):
    with pytest.raises(errors.InstanceNotFound, match="nope"):
        store.update_instance("nope", vm_state=v.ACTIVE)
    inst = _boot(store)
    with pytest.raises(errors.InvalidValue, match="colour"):
        store.update_instance(inst.uuid, colour="red")
    with pytest.raises(errors.InvalidValue, match="'RUNNING'"):
        store.update_instance(inst.uuid, vm_state="RUNNING")


def test_list_instances_filters_by_host_and_state(store):
    a = _boot(store, "a", "h1")
    b = _boot(store, "b", "h2")
    store.update_instance(b.uuid, vm_state=v.ACTIVE)
    assert [i.uuid for i in store.list_instances(host="h1")] == [a.uuid]
    assert [i.uuid for i in store.list_instances(vm_states=[v.ACTIVE])] == [b.uuid]
    assert len(store.list_instances()) == 2


def test_lookup_by_name_or_uuid(store):
    a = _boot(store, "web")
    assert store.lookup_instance("web").uuid == a.uuid
    assert store.lookup_instance(a.uuid).uuid == a.uuid
    _boot(store, "web", "h2")
    with pytest.raises(errors.AmbiguousInstance, match="2 instances are named 'web'"):
        store.lookup_instance("web")
    with pytest.raises(errors.InstanceNotFound, match="'ghost'"):
        store.lookup_instance("ghost")


def test_migrations_record_and_filter(store):
    inst = _boot(store)
    mig = store.create_migration(inst.uuid, "resize", source_host="h1", source_node="h1",
                                 dest_host="h2", dest_node="h2", old_flavor=SMALL,
                                 new_flavor=LARGE, claim_strategy="migration")
    assert store.get_migration(mig.uuid).new_flavor == LARGE
    assert not mig.finished
    assert [m.uuid for m in store.list_migrations(host="h2")] == [mig.uuid]
    assert store.list_migrations(host="h3") == []
    assert [m.uuid for m in store.list_migrations(
        instance_uuid=inst.uuid, statuses=v.UNFINISHED_MIGRATION_STATUSES)] == [mig.uuid]
    done = store.update_migration(mig.uuid, expected_status="pre-migrating", status="confirmed")
    assert done.finished
    with pytest.raises(errors.StateConflict, match="status expected 'pre-migrating'"):
        store.update_migration(mig.uuid, expected_status="pre-migrating", status="reverted")
    assert store.list_migrations(statuses=v.UNFINISHED_MIGRATION_STATUSES) == []


def test_migration_type_is_checked(store):
    with pytest.raises(errors.InvalidValue, match="'teleport'"):
        store.create_migration("x", "teleport", source_host="h1", source_node="h1",
                               old_flavor=SMALL)


def test_compute_nodes_upsert_and_root_uuid(store):
    first = store.record_compute_node("11111111-1111-1111-1111-111111111111", "h1", "n1", "fake")
    again = store.record_compute_node("11111111-1111-1111-1111-111111111111", "h1", "n1", "fake")
    assert again.created_at == first.created_at
    assert again.updated_at >= first.updated_at
    assert store.node_root_uuid("h1", "n1") == first.uuid
    with pytest.raises(errors.ComputeNodeNotFound, match="'h2'.*'n1'"):
        store.node_root_uuid("h2", "n1")
    assert [n.nodename for n in store.list_compute_nodes(host="h1")] == ["n1"]
    store.delete_compute_node(first.uuid)
    assert store.list_compute_nodes() == []


def test_heartbeat_and_host_down(store):
    now = store_mod.utcnow()
    assert not store.is_host_up("h1", 60)
    store.heartbeat("h1", at=now - datetime.timedelta(seconds=300))
    assert not store.is_host_up("h1", 60, now=now)
    store.heartbeat("h1", at=now)
    assert store.is_host_up("h1", 60, now=now)
    store.set_forced_down("h1", True)
    assert not store.is_host_up("h1", 60, now=now)
    assert store.get_service("h1").forced_down
    with pytest.raises(errors.ServiceNotFound, match="'h9'"):
        store.set_forced_down("h9", True)


def test_audit_findings(store):
    store.add_audit_finding("c1", "h1", "multi_node", "on n1 and n2")
    store.add_audit_finding("c2", "h2", "unknown_consumer", "x")
    found = store.list_audit_findings(host="h1")
    assert [(f.consumer_uuid, f.kind, f.detail) for f in found] == [("c1", "multi_node",
                                                                      "on n1 and n2")]
    assert len(store.list_audit_findings()) == 2
