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
    """instance uuid -> node uuid, saved to ``path`` on every change."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._placed: dict[str, str] = self._load()

    def _load(self) -> dict[str, str]:
        try:
            with open(self.path, encoding="utf-8") as stream:
                data = json.load(stream)
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            raise DriverError(f"bare-metal instance records {self.path}: {exc}") from None
        placed = data.get("instances") if isinstance(data, dict) else None
        if not isinstance(placed, dict):
            raise DriverError(f"bare-metal instance records {self.path} have no "
                              "'instances' mapping")
        return {str(k): str(v) for k, v in placed.items()}

    def items(self) -> list[tuple[str, str]]:
        return list(self._placed.items())

    def node_of(self, instance_uuid: str) -> str | None:
        return self._placed.get(instance_uuid)

    def instance_on(self, node_uuid: str) -> str | None:
        return next((i for i, n in self._placed.items() if n == node_uuid), None)

    def add(self, instance_uuid: str, node_uuid: str) -> None:
        self._placed[instance_uuid] = node_uuid
        self._save()

    def remove(self, instance_uuid: str) -> bool:
        if self._placed.pop(instance_uuid, None) is None:
            return False
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
                json.dump({"instances": self._placed}, stream, indent=2, sort_keys=True)
            os.replace(tmp, self.path)
        except OSError as exc:
            raise DriverError(f"saving bare-metal instance records {self.path}: "
                              f"{exc.strerror}") from None
