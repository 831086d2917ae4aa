"""Contract: the provider tree of a node is complete, valid, idempotent and
the same after a restart."""

from __future__ import annotations

import uuid

import pytest

from rtframework.driver_tests.harness import fill_tree, fill_trees, providers
from rtframework.placement import validation

pytestmark = pytest.mark.driver


def test_the_tree_is_the_node_root_and_its_descendants(rtf_driver):
    for nodename in rtf_driver.get_available_nodes():
        root = rtf_driver.get_node_uuid(nodename)
        tree = fill_tree(rtf_driver, nodename)
        assert [(p.uuid, p.name) for p in tree.roots()] == [(root, nodename)], (
            f"node {nodename!r}: the root must stay the only root, named for the node")
        assert len(list(tree)) == len(tree)


def test_every_provider_passes_the_checks_placement_applies(rtf_driver):
    for nodename, tree in fill_trees(rtf_driver).items():
        offered = 0
        for provider in tree.values():
            where = f"node {nodename!r}, provider {provider.name!r}"
            assert provider.uuid == str(uuid.UUID(provider.uuid)), where
            validation.check_provider_name(provider.name)
            validation.check_inventories(f"{provider.uuid} ({provider.name})",
                                         provider.inventory)
            validation.trait_set(provider.traits)
            validation.aggregates(provider.aggregates)
            offered += len(provider.inventory)
        assert offered, f"node {nodename!r} offers no inventory at all"


def test_filling_a_filled_tree_again_changes_nothing(rtf_driver):
    # The tracker fills a fresh tree on every periodic run and compares it
    # with what it sent: a tree that differs each time is written each time.
    for nodename in rtf_driver.get_available_nodes():
        tree = fill_tree(rtf_driver, nodename)
        first = providers(tree.copy())
        rtf_driver.update_provider_tree(tree, nodename)
        assert providers(tree) == first, f"node {nodename!r}: a second fill changed the tree"
        assert providers(fill_tree(rtf_driver, nodename)) == first, (
            f"node {nodename!r}: a fresh fill differs from the first")


def test_nodes_share_no_provider_uuid_or_name(rtf_driver):
    seen: dict[str, str] = {}
    for nodename, tree in fill_trees(rtf_driver).items():
        for provider in tree.values():
            for key in (provider.uuid, f"name:{provider.name}"):
                assert key not in seen, (
                    f"{key} is in the trees of nodes {seen.get(key)!r} and {nodename!r}")
                seen[key] = nodename


def test_trees_are_the_same_after_a_restart(rtf_driver_harness, rtf_driver):
    before = fill_trees(rtf_driver)
    restarted = rtf_driver_harness.restart(rtf_driver)
    after = fill_trees(restarted)
    assert after.keys() == before.keys()
    for nodename, tree in before.items():
        # Child uuids too: a new one would orphan the allocations on the old.
        assert after[nodename] == tree, f"node {nodename!r} reports another tree"
