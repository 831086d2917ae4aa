"""The chaos soak with its hosts spread over the 3 nodes and one node
killed and restarted while it runs: no violation, nothing half-written,
the node back in the cluster with the same rows as the others."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from benchmarks import galera_soak
from rtframework.simulate import runner


@pytest.fixture
def cluster(db_engine_name):
    if db_engine_name != "galera":
        pytest.skip("kills a node of the Galera cluster (RTF_TEST_DB=galera)")
    from tests.fixtures import galera

    return galera.shared_cluster()


@pytest.mark.slow
def test_chaos_soak_survives_a_node_killed_and_restarted_mid_run(cluster, database_url):
    options = runner.Options(hosts=3, operations=36, seed=2112, progress=False,
                             kill_rate=0.1, recheck_delay=galera_soak.RECHECK_DELAY)
    outcome = galera_soak.soak_with_outage(cluster, sa.make_url(database_url).database,
                                           options, node=0)
    result, outage = outcome.result, outcome.outage
    assert result.violations == [], galera_soak.outage_table(outcome)
    assert result.errors == 0
    assert len(result.ops) == 36
    assert result.observations.passes > 0
    # Killed mid-run: operations before, while the node was down, after.
    assert outage.failure is None, outage.failure
    assert outage.before >= outage.kill_after
    assert outage.while_down > 0
    assert outage.after > 0
    # Rejoined, and holds what was written without it.
    assert outcome.node_states == ["Synced"] * 3
    assert outcome.cluster_sizes == [3, 3, 3]
    assert outcome.nodes_agree
    # Spread: node2 is nobody's first choice but hosts 2, 5, ... and the
    # failover of none of node0's clients (they go to node1).
    assert outcome.local_commits[2] > 0


def test_the_outage_schedule_needs_room():
    outage = galera_soak.schedule(36, node=1)
    assert (outage.kill_after, outage.restart_after, outage.rejoin_by) == (12, 18, 30)
    with pytest.raises(ValueError, match="at least 6"):
        galera_soak.schedule(5, node=0)
