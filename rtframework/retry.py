"""The one retry helper for generation conflicts.

A write that lost a generation race must re-read and decide again; it must
never resend the same write with a fresh generation blindly. So the unit of
retry is a function that reads *and* writes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

from rtframework.placement import errors

LOG = logging.getLogger(__name__)

T = TypeVar("T")


class RetriesExhausted(errors.GenerationConflict):
    """Still losing the race after every retry."""


def on_conflict(
    attempt: Callable[[], T],
    retries: int,
    what: str,
    stats: Callable[[], None] | None = None,
) -> T:
    """Run ``attempt`` (read, decide, write) until it does not conflict.

    ``retries`` further tries follow the first; ``stats`` is called once per
    conflict (counters for soaks and benchmarks). The last conflict is
    raised as RetriesExhausted.
    """
    for number in range(retries + 1):
        try:
            return attempt()
        except errors.GenerationConflict as exc:
            if stats is not None:
                stats()
            if number == retries:
                raise RetriesExhausted(
                    f"{what}: still conflicting after {retries + 1} attempts: {exc}"
                ) from exc
            LOG.debug("%s: generation conflict (%s), re-reading (attempt %d)",
                      what, exc, number + 2)
    raise AssertionError("unreachable")
