"""Automatic garbage collection paused while a large answer is built.

CPython collects as container objects accumulate: every few hundred new
ones a young collection, and a full one (every object of the process)
whenever enough of them have survived the younger ones. A search that
builds thousands of candidates makes containers by the tens of thousands,
none of them in a reference cycle, so collections ran during it for
nothing, full ones included, and the unlimited search grew faster than
the cloud (benchmarks/growth.py). Paused, the objects are looked at once,
in the first collection after the build.

The switch is the process's, and the pause is per call, not counted: a
call that finds collection already off (another thread's pause, or the
application's own choice) leaves it as it is, and the call that turned it
off turns it back on, so a pause never outlasts the call that began it.
What that costs:

* Concurrent searches: the first to end turns collection on while the
  others still build, so they are paused for less of their build, never
  for more.
* Other threads run without automatic collection while a pause lasts;
  the sql backend's pause takes in its statements' round trips (one
  search), the http backend's only the decoding of Placement's answer.
* An application that turns collection off, or saves ``gc.isenabled()``
  to restore it later, in another thread while a pause lasts, has it
  turned on when the pause ends, or turns it off for good.
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
