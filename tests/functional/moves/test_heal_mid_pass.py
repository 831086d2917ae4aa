"""A move that begins while a host's periodic pass runs is no finding.

The pass reads the host's records once, before it syncs each node; a move
started in between shows as a doubled claim of an instance that, in those
records, is not moving. Heal must not take that for a finding."""

from __future__ import annotations

import pytest

from rtframework.moves import migrate

pytestmark = pytest.mark.placement

F = {"VCPU": 2, "MEMORY_MB": 1024, "DISK_GB": 10}


def test_a_move_begun_during_the_pass_is_no_finding(cloud, config, caplog):
    config.config(move_claim_strategy="doubled", group="placement")
    cloud.add_host("a")
    cloud.add_host("b")
    vm = cloud.boot("a", F)
    tracker = cloud.trackers["a"]
    report_tree = tracker.driver.update_provider_tree
    started = []

    def move_then_report(tree, nodename):
        if not started:  # after the pass read its records, before heal reads allocations
            started.append(migrate.start(cloud.ctx, vm.uuid, to_host=cloud.host("b")))
        return report_tree(tree, nodename)

    tracker.driver.update_provider_tree = move_then_report
    cloud.periodic("a")
    assert started
    assert cloud.allocations(vm.uuid) == {"a": F, "b": F}  # the doubled claim, seen by heal
    assert cloud.store.list_audit_findings(consumer_uuid=vm.uuid) == []
    assert "leaves consumer" not in caplog.text
