"""Writers racing on one provider: never overcommitted, every node agrees.

Runs on every engine; on RTF_TEST_DB=galera the writers spread over the
three nodes (writer i through node i % 3), which is the case it is for.
"""

from __future__ import annotations

from benchmarks import claims_race


def test_six_writers_never_overcommit_and_every_node_agrees(database_url, tmp_path):
    outcome = claims_race.race(claims_race.writer_urls(database_url), str(tmp_path),
                               writers=6, operations=30)
    assert outcome.writes == 6 * 30
    assert outcome.errors == ()
    assert set(outcome.outcomes) <= {"done", "capacity", "gave_up"}
    assert outcome.max_usage_seen <= claims_race.CAPACITY
    assert outcome.final_usage <= claims_race.CAPACITY
    assert outcome.nodes_agree
