"""Host CPU sets written the way operators write them: ``"0-3,^2,6"``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from oslo_config import types


def parse_cpu_spec(spec: str) -> frozenset[int]:
    """CPU ids of a spec of comma-separated ids and ranges.

    ``N`` and ``N-M`` add CPUs, ``^N`` and ``^N-M`` remove them; removals
    apply after every addition, whatever their place. An empty result is an
    error: a configured set that names no CPU is always a mistake.
    """
    added: set[int] = set()
    removed: set[int] = set()
    for raw in spec.split(","):
        item = raw.strip()
        if not item:
            raise ValueError(f"empty item in CPU set {spec!r}")
        target = added
        if item.startswith("^"):
            target, item = removed, item[1:].strip()
        target.update(_parse_range(item, spec))
    cpus = frozenset(added - removed)
    if not cpus:
        raise ValueError(f"CPU set {spec!r} names no CPU")
    return cpus


def _parse_range(item: str, spec: str) -> range:
    first, sep, last = item.partition("-")
    try:
        start = int(first)
        end = int(last) if sep else start
    except ValueError:
        raise ValueError(f"{item!r} in CPU set {spec!r} is not a CPU id or range") from None
    if start < 0 or end < 0:
        raise ValueError(f"{item!r} in CPU set {spec!r} is negative")
    if end < start:
        raise ValueError(f"range {item!r} in CPU set {spec!r} ends before it starts")
    return range(start, end + 1)


def format_cpu_spec(cpus: Iterable[int]) -> str:
    """The shortest spec without exclusions: ``{0, 1, 2, 5}`` -> ``"0-2,5"``."""
    parts: list[str] = []
    ordered = sorted(set(cpus))
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        parts.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(parts)


class CPUSet(types.ConfigType):
    """oslo.config type: a CPU spec in the ini, a frozenset of ids in code,
    so that a malformed set fails at start-up naming the option."""

    def __init__(self) -> None:
        super().__init__(type_name="CPU set")

    def __call__(self, value: Any) -> frozenset[int]:
        if isinstance(value, frozenset):
            return value
        return parse_cpu_spec(str(value))

    def _formatter(self, value: Any) -> str:
        return value if isinstance(value, str) else format_cpu_spec(value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CPUSet)

    def __hash__(self) -> int:
        return hash(CPUSet)
