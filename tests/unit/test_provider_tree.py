"""The provider tree a driver fills in: what it refuses (with the message a
driver author reads) and what the tracker reads back from it."""

from __future__ import annotations

import pytest

from rtframework.placement.types import Inventory
from rtframework.provider_tree import ProviderTree, ProviderTreeError


def _tree() -> ProviderTree:
    tree = ProviderTree()
    tree.new_root("node", "r")
    tree.new_child("numa0", "r", "n0")
    tree.new_child("gpu", "n0", "g")
    tree.new_child("numa1", "r", "n1")
    return tree


@pytest.mark.parametrize("build,words", [
    (lambda tree: tree.new_child("x", "missing", "x1"),
     "parent provider missing of 'x' is not in the tree"),
    (lambda tree: tree.new_root("other", "n0"), "provider n0 ('other') is already in the tree"),
    (lambda tree: tree.new_child("gpu", "r", "g2"),
     "a provider named 'gpu' is already in the tree"),
    (lambda tree: tree.update_inventory("nope", {}), "provider nope is not in the tree"),
    (lambda tree: tree.add_traits("nope", "CUSTOM_X"), "provider nope is not in the tree"),
    (lambda tree: tree.find_by_name("nope"), "no provider named 'nope' in the tree"),
])
def test_a_broken_tree_is_refused_and_left_as_it_was(build, words):
    tree = _tree()
    before = tree.copy()
    with pytest.raises(ProviderTreeError) as exc:
        build(tree)
    assert str(exc.value) == words
    assert tree == before


def test_parents_come_before_children_and_roots_are_found():
    tree = _tree()
    assert tree.uuids() == ["r", "n0", "n1", "g"]
    assert len(tree) == 4
    assert tree.find_by_name("gpu").parent_uuid == "n0"
    assert [p.uuid for p in tree.roots()] == ["r"]


def test_removing_a_provider_removes_its_descendants():
    tree = _tree()
    tree.remove("n0")
    assert tree.uuids() == ["r", "n1"]
    assert not tree.exists("g")
    tree.remove("gone-already")  # nothing to remove: no error
    assert tree.uuids() == ["r", "n1"]


def test_changed_lists_new_and_changed_parents_first_and_gone_children_first():
    old = _tree()
    assert old.changed(None) == ["r", "n0", "n1", "g"]
    new = old.copy()
    assert new.changed(old) == [] and new == old and new != "tree"
    new.update_inventory("n1", {"VCPU": Inventory(total=4)})
    new.update_traits("r", {"CUSTOM_A"})
    new.update_aggregates("g", {"agg"})
    assert new.changed(old) == ["r", "n1", "g"]
    new.remove("n0")
    new.new_child("numa2", "r", "n2")
    assert new.changed(old) == ["r", "n1", "n2", "g", "n0"]
