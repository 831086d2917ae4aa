"""Contract: the nodes a host reports and their uuids, stable across restarts."""

from __future__ import annotations

import uuid

import pytest

pytestmark = pytest.mark.driver


def _uuids(driver) -> dict[str, str]:
    return {nodename: driver.get_node_uuid(nodename)
            for nodename in driver.get_available_nodes()}


def test_the_host_reports_nodes_with_distinct_names(rtf_driver):
    nodes = rtf_driver.get_available_nodes()
    assert nodes, "the driver reports no node: nothing of this host can be scheduled"
    assert all(isinstance(n, str) and n.strip() for n in nodes), nodes
    assert len(set(nodes)) == len(nodes), f"a node name repeats: {nodes}"


def test_each_node_has_its_own_uuid_in_canonical_form(rtf_driver):
    uuids = _uuids(rtf_driver)
    for nodename, value in uuids.items():
        # The uuid becomes a provider uuid, compared as a string with
        # what placement returns: lower case with hyphens.
        assert value == str(uuid.UUID(value)), f"node {nodename!r}: {value!r}"
    assert len(set(uuids.values())) == len(uuids), f"two nodes share a uuid: {uuids}"


def test_node_uuids_are_the_same_on_every_call(rtf_driver):
    assert _uuids(rtf_driver) == _uuids(rtf_driver)


def test_nodes_and_their_uuids_survive_a_restart(rtf_driver_harness, rtf_driver):
    before = _uuids(rtf_driver)
    restarted = rtf_driver_harness.restart(rtf_driver)
    # A new uuid would make the framework see a new node and orphan the
    # allocations of every instance on the old one.
    assert _uuids(restarted) == before
