"""After a move ends, no host's heal reports what is no longer true.

The heal re-reads allocations only when a provider generation of its tree
moved, so its snapshot can be behind: a consumer whose share of this host
is unchanged kept the node count it had during the move, and Placement
does not bump a provider a consumer only moves off. A finding is therefore
decided again on the consumer's allocations read for it."""

from __future__ import annotations

import uuid

import pytest

from rtframework.moves import migrate, resize

pytestmark = pytest.mark.placement

F = {"VCPU": 2, "MEMORY_MB": 1024, "DISK_GB": 10}


def _findings(reports) -> list[str]:
    return [f for report in reports for f in report.findings]


@pytest.mark.parametrize("strategy", ["doubled", "migration"])
@pytest.mark.parametrize("end", ["confirm", "revert"])
def test_a_finished_move_leaves_no_finding(cloud, config, strategy, end):
    # The doubled claim puts the instance on two nodes while it moves; after
    # a confirm its share of the destination is what it was, so the
    # destination's snapshot still counted two nodes (a false multi_node).
    config.config(move_claim_strategy=strategy, group="placement")
    cloud.add_host("a")
    cloud.add_host("b")
    vm = cloud.boot("a", F)
    for label in "ab":
        cloud.periodic(label)
    move = migrate.migrate(cloud.ctx, vm.uuid, to_host=cloud.host("b"))
    for label in "ab":
        cloud.periodic(label)
    getattr(resize, end)(cloud.ctx, move.uuid)
    reports = [cloud.trackers[label].update_available_resource() for label in "abab"]
    assert cloud.allocations(vm.uuid) == {"b" if end == "confirm" else "a": F}
    assert [_findings(r) for r in reports] == [[], [], [], []]
    assert cloud.store.list_audit_findings() == []
    assert cloud.violations() == []


def test_a_consumer_that_moved_off_is_no_longer_reported_here(cloud):
    # A consumer nobody knows is reported by the host it holds on; moved to
    # the other host (Placement leaves the first host's generation alone),
    # only the host it holds on now reports it. (The sql backend bumps the
    # provider a consumer moves off: this fails without the re-read only on
    # real Placement, RTF_TEST_BACKEND=http, as functional-placement runs it.)
    cloud.add_host("a")
    cloud.add_host("b")
    stray = str(uuid.uuid4())
    cloud.backend.put_allocations(stray, {cloud.root("a"): {"VCPU": 1}},
                                  project_id="p", user_id="u", consumer_generation=None)
    assert _findings(cloud.trackers["a"].update_available_resource()) == \
        [f"{stray}: unknown_consumer"]
    cloud.backend.put_allocations(stray, {cloud.root("b"): {"VCPU": 1}},
                                  project_id="p", user_id="u", consumer_generation=1)
    assert _findings(cloud.trackers["a"].update_available_resource()) == []
    assert _findings(cloud.trackers["b"].update_available_resource()) == \
        [f"{stray}: unknown_consumer"]


def test_a_second_node_gained_while_the_share_here_stays_is_found_by_check(cloud):
    # What the heal's snapshot does not show at once: the instance's share
    # of its own host is unchanged, so that host keeps the node count it
    # read before; the other host leaves an instance it does not own alone.
    # The checker reports it at once, and a restarted agent's heal too
    # (whether or not the heal reported it before, as a fix would).
    cloud.add_host("a")
    cloud.add_host("b")
    vm = cloud.boot("a", F)
    for label in "ab":
        cloud.periodic(label)
    held = cloud.backend.get_consumer_allocations(vm.uuid)
    cloud.backend.put_allocations(vm.uuid, {cloud.root("a"): F, cloud.root("b"): F},
                                  project_id=held.project_id, user_id=held.user_id,
                                  consumer_generation=held.generation)
    for label in "ab":
        cloud.periodic(label)
    assert [v.kind for v in cloud.violations() if v.consumer_uuid == vm.uuid] == \
        ["multi_host_allocation"]
    cloud.add_host("a")  # a restarted agent, whose first pass reads the node anew
    findings = cloud.store.list_audit_findings(consumer_uuid=vm.uuid, kind="multi_node")
    assert {f.host for f in findings} == {cloud.host("a")}
