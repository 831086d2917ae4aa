"""The driver's own record of which instance it put on which node.

Kept apart from the catalogue so that the operator's file is never
rewritten (it may be generated, or carry comments), yet a restart still
knows what runs where.
"""

from __future__ import annotations

import json
import os
import tempfile

from rtframework.driver import DriverError


class InstanceRecords:
    """node uuid -> instance uuid, saved to ``path`` on every change.

    Keyed by node: during a move the same instance may be recorded on two
    nodes (source and destination), and each is freed on its own.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._on: dict[str, str] = self._load()

    def _load(self) -> dict[str, str]:
        try:
            with open(self.path, encoding="utf-8") as stream:
                data = json.load(stream)
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            raise DriverError(f"bare-metal instance records {self.path}: {exc}") from None
        nodes = data.get("nodes") if isinstance(data, dict) else None
        if not isinstance(nodes, dict):
            raise DriverError(f"bare-metal instance records {self.path} have no 'nodes' mapping")
        return {str(k): str(v) for k, v in nodes.items()}

    def instances(self) -> frozenset[str]:
        return frozenset(self._on.values())

    def instance_on(self, node_uuid: str) -> str | None:
        return self._on.get(node_uuid)

    def nodes_of(self, instance_uuid: str) -> list[str]:
        return [n for n, i in self._on.items() if i == instance_uuid]

    def add(self, node_uuid: str, instance_uuid: str) -> None:
        self._on[node_uuid] = instance_uuid
        self._save()

    def remove(self, node_uuid: str, instance_uuid: str) -> bool:
        """Free ``node_uuid`` if ``instance_uuid`` is what it holds."""
        if self._on.get(node_uuid) != instance_uuid:
            return False
        del self._on[node_uuid]
        self._save()
        return True

    def _save(self) -> None:
        # Write a new file and rename it over the old one: a crash leaves
        # either the old record or the new one, never half of either.
        directory = os.path.dirname(os.path.abspath(self.path))
        try:
            os.makedirs(directory, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=directory, prefix=".baremetal-", suffix=".json")
            with os.fdopen(fd, "w", encoding="utf-8") as stream:
                json.dump({"nodes": self._on}, stream, indent=2, sort_keys=True)
            os.replace(tmp, self.path)
        except OSError as exc:
            raise DriverError(f"saving bare-metal instance records {self.path}: "
                              f"{exc.strerror}") from None
