"""The one retry layer: lost races and transient database errors.

Two callers use it, one layer each, never nested:

- :func:`on_conflict` re-runs a caller's read-decide-write function when it
  lost a generation race. A write that lost must re-read and decide again;
  it must never resend the same write with a fresh generation blindly.
- :func:`call` re-runs one backend call (one transaction) when the database
  aborted it as the loser of a race (deadlock, serialization failure, a
  Galera certification failure) or the connection went away (a Galera node
  that left; the pool reconnects, to another node when the URL names more).

Both wait between attempts with exponential backoff and full jitter
(tenacity's ``wait_random_exponential``) so writers that collided spread
out instead of colliding again at once, and both stop after a number of
attempts or a total time, whichever comes first. Running out raises
:class:`~rtframework.placement.errors.RetriesExhausted` (or, when the
database stayed unreachable, ``BackendUnavailable``) naming what was tried,
how often and for how long. A RetriesExhausted is never retried again by an
outer layer: that is what kept attempts at (n+1)^2 before.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable
from typing import TypeVar

import tenacity

from rtframework.placement import errors
from rtframework.placement.errors import RetriesExhausted

LOG = logging.getLogger(__name__)

T = TypeVar("T")

__all__ = ["Backoff", "RetriesExhausted", "call", "on_conflict"]


@dataclasses.dataclass(frozen=True)
class Backoff:
    """How many times and how long to retry.

    The n-th wait is uniform in [0, min(cap, first * 2**n)] seconds. The
    defaults keep ten retries of a busy provider under ~2.5 s of waiting
    and wait ~5 ms after a first collision, about one commit of the
    engines here.
    """

    retries: int = 10
    first: float = 0.01
    cap: float = 0.5
    max_seconds: float = 30.0

    def __post_init__(self) -> None:
        if self.retries < 0 or self.first <= 0 or self.cap < self.first or self.max_seconds <= 0:
            raise ValueError(f"invalid backoff {self}")


def _run(attempt: Callable[[], T], backoff: Backoff, retry_on: Callable[[BaseException], bool],
         what: str | Callable[[], str], on_retry: Callable[[BaseException], None] | None,
         unreachable: Callable[[BaseException], bool] | None = None) -> T:
    started = time.monotonic()
    # Most calls succeed at once: only a failure worth retrying pays for
    # tenacity's machinery, whose first attempt re-raises that failure.
    try:
        return attempt()
    except BaseException as exc:
        if not retry_on(exc):
            raise
        first: list[BaseException] = [exc]

    def again() -> T:
        if first:
            raise first.pop()
        return attempt()

    def name() -> str:
        return what if isinstance(what, str) else what()

    def before_sleep(state: tenacity.RetryCallState) -> None:
        exc = state.outcome.exception()
        if on_retry is not None:
            on_retry(exc)
        LOG.debug("%s: %s; attempt %d in %.3f s", name(), exc, state.attempt_number + 1,
                  state.upcoming_sleep)

    # tenacity's clock starts now: its delay is what is left of the budget.
    left = max(0.0, backoff.max_seconds - (time.monotonic() - started))
    retrying = tenacity.Retrying(
        stop=(tenacity.stop_after_attempt(backoff.retries + 1)
              | tenacity.stop_after_delay(left)),
        wait=tenacity.wait_random_exponential(multiplier=backoff.first, max=backoff.cap),
        retry=tenacity.retry_if_exception(retry_on),
        before_sleep=before_sleep,
        reraise=False,
    )
    try:
        return retrying(again)
    except tenacity.RetryError as exhausted:
        state = exhausted.last_attempt
        last = state.exception()
        if on_retry is not None:
            on_retry(last)
        message = (f"{name()}: still failing after {state.attempt_number} attempt(s) over "
                   f"{time.monotonic() - started:.1f} s: {last}")
        if unreachable is not None and unreachable(last):
            raise errors.BackendUnavailable(message) from last
        raise RetriesExhausted(message) from last


def _is_conflict(exc: BaseException) -> bool:
    return isinstance(exc, errors.GenerationConflict) and not isinstance(exc, RetriesExhausted)


def on_conflict(
    attempt: Callable[[], T],
    retries: int | Backoff,
    what: str,
    stats: Callable[[], None] | None = None,
) -> T:
    """Run ``attempt`` (read, decide, write) until it does not conflict.

    ``retries`` further tries follow the first (or a whole :class:`Backoff`);
    ``stats`` is called once per conflict (counters for soaks and
    benchmarks). The last conflict is raised as RetriesExhausted.
    """
    backoff = retries if isinstance(retries, Backoff) else Backoff(retries=retries)
    on_retry = None if stats is None else (lambda _exc: stats())
    return _run(attempt, backoff, _is_conflict, what, on_retry)


def call(attempt: Callable[[], T], backoff: Backoff, what: str | Callable[[], str],
         retry_on: Callable[[BaseException], bool],
         unreachable: Callable[[BaseException], bool] | None = None) -> T:
    """Run one backend call (``attempt``) again while ``retry_on`` says its
    error was transient; see the module docstring. Running out after an
    error ``unreachable`` recognizes (the database stayed away) raises
    BackendUnavailable, after a lost race RetriesExhausted."""
    return _run(attempt, backoff, retry_on, what, None, unreachable)
