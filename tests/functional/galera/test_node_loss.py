"""A Galera node killed, or cut off from the cluster, under a running
backend: the next calls go to the next node the URL names, nothing is
half-written, and the node rejoins."""

from __future__ import annotations

import time
import uuid

import pytest

from benchmarks.claims_race import backend_on
from rtframework.placement import types as t
from tests.functional.placement.conftest import sql_backend  # noqa: F401


@pytest.fixture
def cluster(db_engine_name):
    if db_engine_name != "galera":
        pytest.skip("kills or cuts off a node of the Galera cluster (RTF_TEST_DB=galera)")
    from tests.fixtures import galera

    return galera.shared_cluster()


def test_a_backend_keeps_working_when_its_node_is_killed(cluster, sql_backend,  # noqa: F811
                                                          tmp_path):
    backend = sql_backend  # its URL names node0 first, then node1 and node2
    rp = backend.create_provider(f"survivor-{uuid.uuid4().hex[:8]}")
    backend.set_inventories(rp.uuid, rp.generation, {"VCPU": t.Inventory(total=8)})
    before = str(uuid.uuid4())
    backend.put_allocations(before, {rp.uuid: {"VCPU": 2}}, project_id="p", user_id="u",
                            consumer_generation=None)
    cluster.kill(0)
    try:
        after = str(uuid.uuid4())
        backend.put_allocations(after, {rp.uuid: {"VCPU": 3}}, project_id="p", user_id="u",
                                consumer_generation=None)
        assert backend.get_provider_allocations(rp.uuid) == {
            before: {"VCPU": 2}, after: {"VCPU": 3}}
    finally:
        cluster.restart(0)
    # The restarted node has caught up with what was written without it.
    direct = backend_on(cluster.url(0, backend.engine.url.database), str(tmp_path))
    try:
        assert direct.get_provider_usages(rp.uuid) == {"VCPU": 5}
    finally:
        direct.close()


def _isolate(node, isolated: bool) -> None:
    """Cut ``node`` off the cluster's group communication (it stays up and
    answers, outside the primary component), or let it back in."""
    import pymysql

    conn = pymysql.connect(unix_socket=node.socket, user="root", autocommit=True)
    try:
        with conn.cursor() as cur:
            cur.execute("SET GLOBAL wsrep_provider_options = %s",
                        (f"gmcast.isolate={int(isolated)}",))
    finally:
        conn.close()


def _until(check, what: str, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} after {seconds:.0f} s")
        time.sleep(0.5)


def test_a_backend_leaves_a_node_cut_off_from_the_cluster(cluster, sql_backend):  # noqa: F811
    # The node still runs and answers a ping, but every statement on a
    # table gets error 1047: the pooled connection to it must go, and the
    # next one goes to the next node that serves.
    backend = sql_backend  # its URL names node0 first, then node1 and node2
    rp = backend.create_provider(f"cut-off-{uuid.uuid4().hex[:8]}")
    node0 = cluster.nodes[0]
    _isolate(node0, True)
    try:
        _until(lambda: node0.status("wsrep_ready") == "OFF", "node0 still serving")
        gen = backend.set_inventories(rp.uuid, rp.generation, {"VCPU": t.Inventory(total=8)})
        assert backend.get_inventories(rp.uuid).generation == gen
        with backend.engine.connect() as conn:
            assert conn.exec_driver_sql("SELECT @@port").scalar() != node0.port
    finally:
        _isolate(node0, False)
        cluster._wait(node0, size=3)  # back in, for the tests after this one
