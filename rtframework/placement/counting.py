"""A backend wrapper that counts calls, for the tracker's no-write
guarantee, soaks and benchmarks."""

from __future__ import annotations

import collections
from dataclasses import dataclass, field
from typing import Any

from rtframework.placement.backend import PlacementBackend

_READ_PREFIXES = ("get_", "list_")


@dataclass
class CallStats:
    """Backend calls made through a CountingBackend."""

    reads: int = 0
    writes: int = 0
    conflicts: int = 0
    by_method: collections.Counter = field(default_factory=collections.Counter)

    def conflict(self) -> None:
        """Count one lost generation race (a ``stats`` hook for retry.on_conflict)."""
        self.conflicts += 1

    def reset(self) -> None:
        self.reads = self.writes = self.conflicts = 0
        self.by_method.clear()


class CountingBackend:
    """Forwards every call to ``backend``, counting reads (get_*, list_*)
    and writes (everything else public that is called)."""

    def __init__(self, backend: PlacementBackend, stats: CallStats | None = None) -> None:
        self.wrapped = backend
        self.stats = stats if stats is not None else CallStats()

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.wrapped, name)
        if name.startswith("_") or not callable(attr) or name == "close":
            return attr

        def counted(*args: Any, **kwargs: Any) -> Any:
            if name.startswith(_READ_PREFIXES):
                self.stats.reads += 1
            else:
                self.stats.writes += 1
            self.stats.by_method[name] += 1
            return attr(*args, **kwargs)

        return counted
