"""Values of the CLI's columns: one text for the table, the value itself
for ``-f json`` and ``-f yaml``.

A column that holds a mapping, a list or nothing is wrapped in one of
these (cliff's :class:`~cliff.columns.FormattableColumn`), so a script
reads ``{"VCPU": 2}``, ``["HW_CPU_X86_AVX2"]`` or ``null`` where the table
shows ``VCPU=2``, ``HW_CPU_X86_AVX2`` or an empty cell.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from cliff.columns import FormattableColumn


class Optional(FormattableColumn):
    """A value that may be missing: an empty cell, ``null`` in JSON."""

    def human_readable(self) -> str:
        return "" if self._value is None else str(self._value)

    def machine_readable(self) -> Any:
        return self._value


def optional(value: Any) -> Optional:
    """``value``, with "" (how the records spell "none" in places) as None."""
    return Optional(None if value == "" else value)


class Names(FormattableColumn):
    """A set of names (traits, aggregates): sorted, space-joined in a table."""

    def __init__(self, value: Iterable[str]) -> None:
        super().__init__(sorted(value))

    def human_readable(self) -> str:
        return " ".join(self._value)

    def machine_readable(self) -> list[str]:
        return list(self._value)


class Lines(FormattableColumn):
    """Items in order (findings, errors, classes changed): joined with
    ``separator`` in a table."""

    def __init__(self, value: Iterable[str], separator: str = "; ") -> None:
        super().__init__(list(value))
        self._separator = separator

    def human_readable(self) -> str:
        return self._separator.join(self._value)

    def machine_readable(self) -> list[str]:
        return list(self._value)


class Amounts(FormattableColumn):
    """Resource class -> amount: ``MEMORY_MB=512,VCPU=2`` in a table."""

    def __init__(self, value: Mapping[str, Any]) -> None:
        super().__init__(dict(sorted(value.items())))

    def human_readable(self) -> str:
        return ",".join(f"{key}={amount}" for key, amount in self._value.items())

    def machine_readable(self) -> dict[str, Any]:
        return dict(self._value)


class Flavor(FormattableColumn):
    """A flavor: ``small (MEMORY_MB=512,VCPU=1)`` in a table, its name and
    resources apart in JSON and YAML."""

    def __init__(self, name: str, resources: Mapping[str, int]) -> None:
        super().__init__({"name": name, "resources": dict(sorted(resources.items()))})

    def human_readable(self) -> str:
        resources = Amounts(self._value["resources"]).human_readable()
        return f"{self._value['name']} ({resources})"

    def machine_readable(self) -> dict[str, Any]:
        return {"name": self._value["name"], "resources": dict(self._value["resources"])}


class Usage(FormattableColumn):
    """Resource class -> (used, capacity): ``VCPU=1/8, ...`` in a table."""

    def __init__(self, value: Mapping[str, tuple[int, int]]) -> None:
        super().__init__({rc: {"used": used, "capacity": capacity}
                          for rc, (used, capacity) in sorted(value.items())})

    def human_readable(self) -> str:
        return ", ".join(f"{rc}={v['used']}/{v['capacity']}" for rc, v in self._value.items())

    def machine_readable(self) -> dict[str, dict[str, int]]:
        return {rc: dict(v) for rc, v in self._value.items()}


class Nested(FormattableColumn):
    """A mapping of mappings (provider -> class -> amount, class -> fields):
    compact sorted JSON in a table, the mapping itself in JSON and YAML."""

    def __init__(self, value: Mapping[str, Mapping[str, Any]]) -> None:
        super().__init__({key: dict(sorted(inner.items()))
                          for key, inner in sorted(value.items())})

    def human_readable(self) -> str:
        return json.dumps(self._value, sort_keys=True)

    def machine_readable(self) -> dict[str, dict[str, Any]]:
        return {key: dict(inner) for key, inner in self._value.items()}
