"""``rtf allocation-candidates list`` with numbered groups, shaped as
osc-placement's ``allocation candidate list``."""

from __future__ import annotations

import pytest

from tests.functional.operator.conftest import as_json

_json = as_json
AGG = "7a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"


@pytest.fixture
def tree(rtf):
    """A root with VCPU and two children with one VGPU each; h1 beside it."""
    _json(rtf, "compute", "update", "--host", "h1")
    _json(rtf, "providers", "create", "box")
    _json(rtf, "inventory", "set", "box", "--resource", "VCPU=4")
    for gpu in ("gpu-a", "gpu-b"):
        _json(rtf, "providers", "create", gpu, "--parent-provider", "box")
        _json(rtf, "inventory", "set", gpu, "--resource", "VGPU=1")
    _json(rtf, "traits", "set", "box", "--trait", "CUSTOM_ROOT_GOLD")
    _json(rtf, "aggregates", "set", "gpu-b", "--aggregate", AGG)
    return rtf


def _candidates(rtf, *args):
    """Each candidate as {provider name: allocation}, and its groups."""
    rows = _json(rtf, "allocation-candidates", "list", *args)
    found: dict[int, dict] = {}
    for row in rows:
        found.setdefault(row["#"], {})[row["Provider name"]] = (row["Allocation"],
                                                                 row["Groups"])
    return list(found.values())


def test_numbered_groups_with_a_group_policy(tree):
    got = _candidates(tree, "--resource", "VCPU=1", "--group", "1", "--resource", "VGPU=1",
                      "--group", "2", "--resource", "VGPU=1", "--group-policy", "isolate")
    assert len(got) == 2
    for candidate in got:
        assert candidate["box"] == ({"VCPU": 1}, ["(unnumbered)"])
        assert {groups[0] for name, (_, groups) in candidate.items() if name != "box"} == {
            "1", "2"}
    # 'none' lets the groups share a GPU, but one GPU has a single VGPU.
    shared = _candidates(tree, "--group", "1", "--resource", "VGPU=1", "--group", "2",
                         "--resource", "VGPU=1", "--group-policy", "none",
                         "--in-tree", "gpu-a")
    assert len(shared) == 2 and all(set(c) == {"gpu-a", "gpu-b"} for c in shared)


def test_group_member_of_in_tree_and_root_required(tree):
    (only,) = _candidates(tree, "--group", "1", "--resource", "VGPU=1", "--member-of", AGG)
    assert only == {"gpu-b": ({"VGPU": 1}, ["1"])}
    (only,) = _candidates(tree, "--resource", "VCPU=1", "--in-tree", "gpu-a",
                          "--root-required", "CUSTOM_ROOT_GOLD")
    assert list(only) == ["box"]
    assert _candidates(tree, "--resource", "VCPU=1", "--root-required",
                       "!CUSTOM_ROOT_GOLD") != []
    assert all("box" not in c for c in _candidates(
        tree, "--resource", "VCPU=1", "--root-required", "!CUSTOM_ROOT_GOLD"))


@pytest.mark.parametrize("args,says", [
    (("--group", "1", "--resource", "VGPU=1", "--group", "2", "--resource", "VGPU=1"),
     "group_policy"),
    (("--resource", "VCPU=1", "--resource", "VCPU=2"), "names VCPU twice"),
    (("--group", "1", "--required", "CUSTOM_X"), "asks for no resources"),
    (("--resource", "VCPU=1", "--group", "1", "--resource", "VGPU=1", "--group", "1"),
     "group 1 is given twice"),
    (("--group", "a b", "--resource", "VCPU=1"), "a group suffix is"),
    (("--in-tree", "nowhere", "--resource", "VCPU=1"), "nowhere"),
])
def test_bad_requests_exit_2_naming_the_problem(tree, args, says):
    code, _, err = tree("allocation-candidates", "list", *args)
    assert code == 2 and says in err, err
