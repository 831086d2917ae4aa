"""Reading the bare-metal node catalogue and deciding which nodes are reserved."""

from __future__ import annotations

import pathlib

import pytest

from rtframework_drivers.baremetal import catalogue as cat
from rtframework_drivers.baremetal.reservation import reservation_reason

FIXTURES = pathlib.Path(__file__).resolve().parents[2] / "fixtures" / "baremetal"
X = "9e9e0000-0000-4000-8000-000000000001"


@pytest.mark.parametrize(("name", "normalized"), [
    ("baremetal-gold", "CUSTOM_BAREMETAL_GOLD"),
    ("baremetal.silver", "CUSTOM_BAREMETAL_SILVER"),
    ("Large  GPU/x2", "CUSTOM_LARGE_GPU_X2"),
    ("CUSTOM_BAREMETAL_GOLD", "CUSTOM_BAREMETAL_GOLD"),  # not CUSTOM_CUSTOM_...
])
def test_resource_class_normalization(name, normalized):
    assert cat.normalize_resource_class(name) == normalized


def test_yaml_catalogue_reads_nodes_and_leaves_out_bad_ones():
    found = cat.load_catalogue(str(FIXTURES / "nodes.yaml"))
    assert [n.name for n in found.nodes] == [
        "gold-1", "gold-2", "silver-1", "silver-2", "taken-1",
        "1f0a5c1e-0006-4a8e-9c1e-000000000006"]
    gold = found.find("gold-1")
    assert gold == cat.Node(
        uuid="1f0a5c1e-0001-4a8e-9c1e-000000000001", name="gold-1",
        resource_class="CUSTOM_BAREMETAL_GOLD", provision_state="available",
        maintenance=False, power_state="power off",
        traits=frozenset({"CUSTOM_RAID10", "HW_CPU_X86_AVX2"}), instance_uuid=None,
        properties=cat.Properties(cpus=32, memory_mb=262144, local_gb=1800))
    assert found.find("taken-1").instance_uuid == X
    assert found.errors == (
        "node 'no-class' (1f0a5c1e-0007-4a8e-9c1e-000000000007) has no resource_class; "
        "it cannot be offered",
        "node 'bad-trait': traits 'fast' are neither standard traits nor CUSTOM_[A-Z0-9_]+",
    )


def test_asking_for_a_left_out_node_gives_its_own_error():
    found = cat.load_catalogue(str(FIXTURES / "nodes.yaml"))
    with pytest.raises(cat.NodeError, match="nodes.yaml: node 'no-class' .* no resource_class"):
        found.find("no-class")
    with pytest.raises(cat.NodeError, match="has no node named 'ghost'"):
        found.find("ghost")


def test_json_catalogue_as_a_plain_list():
    found = cat.load_catalogue(str(FIXTURES / "nodes.json"))
    assert [(n.name, n.resource_class, n.traits) for n in found.nodes] == [
        ("bm-1", "CUSTOM_BAREMETAL_GOLD", frozenset({"CUSTOM_GPU_A100"})),
        ("bm-2", "CUSTOM_BAREMETAL_GOLD", frozenset()),
    ]
    assert found.errors == ()


@pytest.mark.parametrize(("fixture", "problem"), [
    ("malformed.json", r"malformed.json is not valid JSON: .*line 3"),
    ("malformed.yaml", r"malformed.yaml is not valid YAML: expected .,. or .\].*at line 4"),
    ("wrong-shape.yaml", r"wrong-shape.yaml must hold a list of nodes or a mapping with a "
                         r"'nodes' list, not dict"),
    ("missing.yaml", r"missing.yaml: No such file or directory"),
])
def test_unreadable_catalogue_names_file_and_problem(fixture, problem):
    with pytest.raises(cat.CatalogueError, match=problem):
        cat.load_catalogue(str(FIXTURES / fixture))


def test_unknown_extension_is_refused(tmp_path):
    path = tmp_path / "nodes.txt"
    path.write_text("[]")
    with pytest.raises(cat.CatalogueError, match=r"nodes.txt: unknown extension '.txt'"):
        cat.load_catalogue(str(path))


@pytest.mark.parametrize(("entry", "problem"), [
    ("- 42", "node #1 is a int, not a mapping"),
    ("- {name: a, resource_class: x}", "node 'a' has no valid uuid (got None)"),
    ("- {uuid: nope, resource_class: x}", "node 'nope' has no valid uuid (got 'nope')"),
    ("- {uuid: 3c3c0000-0000-4000-8000-000000000001, name: a, resource_class: x,"
     " maintenance: 'yes'}", "node 'a': maintenance must be true or false, not 'yes'"),
    ("- {uuid: 3c3c0000-0000-4000-8000-000000000001, name: a, resource_class: x,"
     " properties: {cpus: -1}}", "node 'a': properties.cpus must be a whole number >= 0, not -1"),
    ("- {uuid: 3c3c0000-0000-4000-8000-000000000001, name: a, resource_class: x,"
     " instance_uuid: vm1}", "node 'a': instance_uuid 'vm1' is not a uuid"),
])
def test_bad_node_fields_are_per_node_errors(tmp_path, entry, problem):
    path = tmp_path / "nodes.yaml"
    path.write_text(entry + "\n- {uuid: 3c3c0000-0000-4000-8000-0000000000ff, name: ok, "
                    "resource_class: x}\n")
    found = cat.load_catalogue(str(path))
    assert [n.name for n in found.nodes] == ["ok"]
    assert found.errors == (problem,)


def test_repeated_uuid_or_name_keeps_the_first(tmp_path):
    path = tmp_path / "nodes.yaml"
    path.write_text(
        "- {uuid: 3c3c0000-0000-4000-8000-000000000001, name: a, resource_class: x}\n"
        "- {uuid: 3c3c0000-0000-4000-8000-000000000001, name: b, resource_class: x}\n"
        "- {uuid: 3c3c0000-0000-4000-8000-000000000002, name: a, resource_class: x}\n")
    found = cat.load_catalogue(str(path))
    assert [n.name for n in found.nodes] == ["a"]
    assert found.errors == (
        "node 'b' repeats uuid 3c3c0000-0000-4000-8000-000000000001",
        "node 'a' (3c3c0000-0000-4000-8000-000000000002) repeats the name of an earlier node",
    )


def node(**fields):
    return cat.Node(uuid="u", name="n", resource_class="CUSTOM_X", **fields)


@pytest.mark.parametrize(("fields", "occupant", "known", "reason"), [
    ({}, None, set(), None),                                   # available and free
    ({"provision_state": "active"}, X, {X}, None),            # allocated, not reserved
    ({"provision_state": "active"}, X, set(), f"occupied by instance {X}, which the "
                                             "framework does not know"),
    ({}, X, set(), f"occupied by instance {X}, which the framework does not know"),
    ({"provision_state": "active"}, None, set(), "active with no instance on it"),
    ({"maintenance": True}, None, set(), "in maintenance"),
    ({"maintenance": True, "provision_state": "active"}, X, {X}, "in maintenance"),
    ({"power_state": "error"}, None, set(), "power state is error"),
    ({"power_state": "power off"}, None, set(), None),
    ({"provision_state": "cleaning"}, None, set(), "provision state is 'cleaning'"),
    ({"provision_state": "manageable"}, None, set(), "provision state is 'manageable'"),
    ({"provision_state": "deploy failed"}, X, {X}, "provision state is 'deploy failed'"),
])
def test_reservation_rules(fields, occupant, known, reason):
    assert reservation_reason(node(**fields), occupant, frozenset(known)) == reason
