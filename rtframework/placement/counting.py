"""A backend wrapper that counts calls, for the tracker's no-write
guarantee, soaks and benchmarks."""

from __future__ import annotations

import collections
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rtframework.placement.backend import PlacementBackend
from rtframework.proxy import CallProxy

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


class CountingBackend(CallProxy):
    """Forwards every call to ``backend``, counting reads (get_*, list_*)
    and writes (everything else public that is called)."""

    _passed_through = frozenset({"close"})

    def __init__(self, backend: PlacementBackend, stats: CallStats | None = None) -> None:
        super().__init__(backend)
        self.stats = stats if stats is not None else CallStats()

    def _around(self, name: str, call: Callable[[], Any]) -> Any:
        if name.startswith(_READ_PREFIXES):
            self.stats.reads += 1
        else:
            self.stats.writes += 1
        self.stats.by_method[name] += 1
        return call()
