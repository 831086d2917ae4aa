"""Automatic garbage collection paused while a large answer is built.

CPython starts a collection every few hundred new container objects and
a full one (every object of the process) whenever enough of them have
survived the younger ones. An unlimited search at 10,000 providers makes
containers by the tens of thousands, none of them in a reference cycle:
with collection on, it ran hundreds of young collections and full ones
besides, and grew faster than the cloud (README, Benchmarks). Paused, the
objects are looked at once, in the first collection after the build.

The pause is per call, not counted: a call that finds collection already
off (another thread's build, or the application's own choice) leaves it
as it is, and the call that turned it off turns it back on, so the pause
never outlasts the call that began it. An application that turns
collection off while such a call runs in another thread has it turned on
again when that call ends.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def pause_gc() -> Iterator[None]:
    """No automatic collection in the block (see the module's docstring)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
