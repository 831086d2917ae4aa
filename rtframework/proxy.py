"""A forwarding proxy whose subclasses decide what happens around each call.

The backend wrappers (``placement.counting.CountingBackend``, the soak's
``simulate.chaos.ConflictCounter`` and ``simulate.dbnodes.Steady``) all
pass every attribute through and wrap only public method calls.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any


class CallProxy:
    """Forwards to ``wrapped``; a call of a public method goes through
    :meth:`_around` (attributes, private methods and the names in
    ``_passed_through`` are handed out as they are)."""

    _passed_through: frozenset[str] = frozenset()

    def __init__(self, wrapped: Any) -> None:
        self.wrapped = wrapped

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.wrapped, name)
        if name.startswith("_") or not callable(attr) or name in self._passed_through:
            return attr

        def forwarded(*args: Any, **kwargs: Any) -> Any:
            return self._around(name, functools.partial(attr, *args, **kwargs))

        return forwarded

    def _around(self, name: str, call: Callable[[], Any]) -> Any:
        """Run ``call``, the method ``name`` with its arguments."""
        return call()
