"""The node catalogue: the operator's file of bare-metal nodes.

A file that cannot be read at all is one :class:`CatalogueError`; a node that
cannot be used (no resource class, a bad trait...) is left out with one error
line naming it, so the other nodes are still reported.
"""

from __future__ import annotations

import json
import os
import uuid as uuidlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import os_resource_classes as orc
import yaml

from rtframework.driver import DriverError
from rtframework.placement.validation import STANDARD_TRAITS, is_custom_name

AVAILABLE = "available"
ACTIVE = "active"
POWER_ERROR = "error"
PROPERTIES = ("cpus", "memory_mb", "local_gb")



class CatalogueError(DriverError):
    """The catalogue file cannot be read or has the wrong shape."""


class NodeError(DriverError):
    """One node of the catalogue cannot be used."""


@dataclass(frozen=True)
class Properties:
    cpus: int | None = None
    memory_mb: int | None = None
    local_gb: int | None = None


@dataclass(frozen=True)
class Node:
    uuid: str
    name: str
    resource_class: str  # normalized: CUSTOM_*
    provision_state: str = AVAILABLE
    maintenance: bool = False
    power_state: str | None = None
    traits: frozenset[str] = frozenset()
    instance_uuid: str | None = None
    properties: Properties = Properties()


@dataclass(frozen=True)
class Catalogue:
    path: str
    nodes: tuple[Node, ...]
    errors: tuple[str, ...] = ()

    def find(self, name: str) -> Node:
        for node in self.nodes:
            if node.name == name:
                return node
        for error in self.errors:
            if error.startswith(f"node {name!r}"):
                raise NodeError(f"{self.path}: {error}")
        raise NodeError(f"{self.path} has no node named {name!r}")


def normalize_resource_class(name: str) -> str:
    """``baremetal-gold`` -> ``CUSTOM_BAREMETAL_GOLD``; a valid custom class
    is kept as it is (normalizing it again would prefix CUSTOM_ twice)."""
    if is_custom_name(name):
        return name
    return orc.normalize_name(name)


def load_catalogue(path: str) -> Catalogue:
    raw = _read(path)
    entries = raw.get("nodes") if isinstance(raw, Mapping) else raw
    if not isinstance(entries, list):
        raise CatalogueError(
            f"node catalogue {path} must hold a list of nodes or a mapping with a "
            f"'nodes' list, not {type(raw).__name__}")
    nodes: list[Node] = []
    errors: list[str] = []
    seen_uuids: set[str] = set()
    seen_names: set[str] = set()
    for index, entry in enumerate(entries, start=1):
        try:
            node = _node(entry, index)
            if node.uuid in seen_uuids:
                raise NodeError(f"node {node.name!r} repeats uuid {node.uuid}")
            if node.name in seen_names:
                raise NodeError(f"node {node.name!r} ({node.uuid}) repeats the name of "
                                "an earlier node")
        except NodeError as exc:
            errors.append(str(exc))
            continue
        seen_uuids.add(node.uuid)
        seen_names.add(node.name)
        nodes.append(node)
    return Catalogue(path=path, nodes=tuple(nodes), errors=tuple(errors))


def _read(path: str) -> Any:
    ext = os.path.splitext(path)[1].lower()
    if ext not in (".json", ".yaml", ".yml"):
        raise CatalogueError(f"node catalogue {path}: unknown extension {ext or '(none)'!r}; "
                             "use .json, .yaml or .yml")
    try:
        with open(path, encoding="utf-8") as stream:
            text = stream.read()
    except OSError as exc:
        raise CatalogueError(f"node catalogue {path}: {exc.strerror}") from None
    try:
        return json.loads(text) if ext == ".json" else yaml.safe_load(text)
    except json.JSONDecodeError as exc:
        raise CatalogueError(f"node catalogue {path} is not valid JSON: {exc}") from None
    except yaml.YAMLError as exc:
        raise CatalogueError(f"node catalogue {path} is not valid YAML: {_yaml_reason(exc)}") \
            from None


def _yaml_reason(exc: yaml.YAMLError) -> str:
    """PyYAML's problem and position on one line (its str() spans several)."""
    problem = getattr(exc, "problem", None)
    mark = getattr(exc, "problem_mark", None)
    if problem and mark is not None:
        return f"{problem} at line {mark.line + 1}, column {mark.column + 1}"
    return " ".join(str(exc).split())


def _node(entry: Any, index: int) -> Node:
    if not isinstance(entry, Mapping):
        raise NodeError(f"node #{index} is a {type(entry).__name__}, not a mapping")
    label = entry.get("name") or entry.get("uuid") or f"#{index}"
    where = f"node {label!r}"
    try:
        uuid = str(uuidlib.UUID(str(entry.get("uuid"))))
    except ValueError:
        raise NodeError(f"{where} has no valid uuid (got {entry.get('uuid')!r})") from None
    name = entry.get("name") or uuid
    if not isinstance(name, str):
        raise NodeError(f"{where}: name must be a string, not {name!r}")
    where = f"node {name!r}"
    resource_class = entry.get("resource_class")
    if not resource_class or not isinstance(resource_class, str):
        raise NodeError(f"{where} ({uuid}) has no resource_class; it cannot be offered")
    return Node(
        uuid=uuid,
        name=name,
        resource_class=normalize_resource_class(resource_class),
        provision_state=_string(entry, "provision_state", AVAILABLE, where),
        maintenance=_flag(entry, "maintenance", where),
        power_state=_string(entry, "power_state", None, where),
        traits=_traits(entry.get("traits") or [], where),
        instance_uuid=_instance(entry.get("instance_uuid"), where),
        properties=_properties(entry.get("properties") or {}, where),
    )


def _string(entry: Mapping, key: str, default: str | None, where: str) -> str | None:
    value = entry.get(key, default)
    if value is not None and not isinstance(value, str):
        raise NodeError(f"{where}: {key} must be a string, not {value!r}")
    return value


def _flag(entry: Mapping, key: str, where: str) -> bool:
    value = entry.get(key, False)
    if not isinstance(value, bool):
        raise NodeError(f"{where}: {key} must be true or false, not {value!r}")
    return value


def _traits(traits: Any, where: str) -> frozenset[str]:
    if not isinstance(traits, list):
        raise NodeError(f"{where}: traits must be a list, not {traits!r}")
    bad = [t for t in traits
           if not isinstance(t, str) or not (t in STANDARD_TRAITS or is_custom_name(t))]
    if bad:
        raise NodeError(f"{where}: traits {', '.join(map(repr, bad))} are neither standard "
                        "traits nor CUSTOM_[A-Z0-9_]+")
    return frozenset(traits)


def _instance(value: Any, where: str) -> str | None:
    if value in (None, ""):
        return None
    try:
        return str(uuidlib.UUID(str(value)))
    except ValueError:
        raise NodeError(f"{where}: instance_uuid {value!r} is not a uuid") from None


def _properties(props: Any, where: str) -> Properties:
    if not isinstance(props, Mapping):
        raise NodeError(f"{where}: properties must be a mapping, not {props!r}")
    values = {}
    for key in PROPERTIES:
        value = props.get(key)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool)
                                  or value < 0):
            raise NodeError(f"{where}: properties.{key} must be a whole number >= 0, "
                            f"not {value!r}")
        values[key] = value
    return Properties(**values)
