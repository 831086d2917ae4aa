"""Automatic garbage collection paused while a large answer is built.

CPython starts a collection every few hundred new container objects and
a full one (the whole heap) whenever enough of them have survived two
younger ones. Building 10,000 allocation candidates makes about 150,000
containers, none of them in a reference cycle: with collection on, that
build ran some 200 young and two full collections, a third of its time at
10,000 providers (README, Benchmarks). Paused, the objects are looked at
once, in the first collection after the build.

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
