"""A Galera node killed under a running backend: the next calls go to the
next node the URL names, nothing is half-written, and the node rejoins."""

from __future__ import annotations

import uuid

import pytest

from benchmarks.claims_race import backend_on
from rtframework.placement import types as t
from tests.functional.placement.conftest import sql_backend  # noqa: F401


@pytest.fixture
def cluster(db_engine_name):
    if db_engine_name != "galera":
        pytest.skip("kills a node of the Galera cluster (RTF_TEST_DB=galera)")
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
