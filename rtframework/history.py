"""The allocation history hook: who changed which allocation, and why.

Code that writes allocations calls :func:`note` after a successful write
(the tracker's and the moves' logging helpers do, so every logged change is
recorded too). Recording is switched on by whoever knows *who* is acting:
``with history.recording(store, "host-a"):`` for the current thread (or
task), or :func:`enable` for the whole process. Without a recorder ``note``
costs one context-variable lookup.

The history lives in the compute store, not in placement, so a row is
written after the placement write it describes, in its own transaction: a
crash in between loses the row, never the allocation. A failed history
write is logged and swallowed for the same reason: accounting must not
stop because its diary is unavailable.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from rtframework.placement import types as t

LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class Recorder:
    store: object  # a ComputeStore (not imported: compute must not import this module back)
    who: str


_current: contextvars.ContextVar[Recorder | None] = contextvars.ContextVar(
    "rtframework_history_recorder", default=None)
_process_default: list[Recorder | None] = [None]


def enable(store, who: str) -> None:
    """Record every change this process makes (threads without their own
    recorder included) as made by ``who``."""
    _process_default[0] = Recorder(store, who)


def disable() -> None:
    _process_default[0] = None


@contextlib.contextmanager
def recording(store, who: str) -> Iterator[None]:
    """Record the changes made inside the block as made by ``who``."""
    token = _current.set(Recorder(store, who))
    try:
        yield
    finally:
        _current.reset(token)


def active() -> Recorder | None:
    return _current.get() or _process_default[0]


def _plain(resources: Mapping[str, int] | None) -> dict[str, int]:
    return {rc: int(n) for rc, n in (resources or {}).items() if n}


def note(consumer: str, before: t.Allocations, after: t.Allocations, why: str) -> None:
    """Record what ``consumer`` held before and after a write, per provider
    whose share changed; a no-op when nobody is recording."""
    recorder = active()
    if recorder is None:
        return
    changes = []
    for provider in sorted(set(before) | set(after)):
        old, new = _plain(before.get(provider)), _plain(after.get(provider))
        if old != new:
            changes.append((consumer, provider, old, new))
    if not changes:
        return
    try:
        recorder.store.add_allocation_changes(changes, who=recorder.who, why=why)
    except Exception as exc:  # the write it describes succeeded; keep going
        LOG.warning("could not record allocation history of consumer %s: %s", consumer, exc)
