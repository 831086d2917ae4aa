"""A host's agent loop: periodic passes, and a heartbeat of its own.

The heartbeat runs in its own thread, so that a slow pass (a driver that
takes minutes to list its guests, a placement service that is slow to
answer) does not make a live host look down: other hosts may evacuate
the instances of a down host, and would start a second copy of guests
this one still runs. An agent that is wedged for good keeps its
heartbeat too; an operator who has fenced the host marks it forced down
(``rtf compute-services set HOST --down``), as in any cloud.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from oslo_config import cfg

from rtframework.driver import DriverError
from rtframework.tracker import ResourceTracker

LOG = logging.getLogger(__name__)


def heartbeat_interval(conf: cfg.ConfigOpts) -> float:
    """Seconds between two heartbeats: well within service_down_time."""
    return max(1.0, conf.service_down_time / 3)


def run(conf: cfg.ConfigOpts, tracker: ResourceTracker, one_pass: Callable[[], None],
        stop: threading.Event) -> None:
    """Call ``one_pass`` every update_resources_interval seconds (from the
    start of one to the start of the next; a pass that took longer is
    followed at once) until ``stop`` is set, heartbeating meanwhile; a
    failed pass is logged and the next one runs on time."""
    beat = heartbeat_interval(conf)
    LOG.warning("compute agent of host %s: update every %ss, heartbeat every %ss",
                tracker.host, conf.update_resources_interval, beat)
    beating = threading.Thread(target=_heartbeats, args=(tracker, beat, stop),
                               name=f"heartbeat-{tracker.host}", daemon=True)
    beating.start()
    try:
        while not stop.is_set():
            started = time.monotonic()
            try:
                one_pass()
            except DriverError as exc:
                # Expected and named (a catalogue file half written, a
                # hypervisor restarting): one line, no traceback.
                LOG.error("resource update of host %s failed: %s; retrying", tracker.host, exc)
            except Exception:  # the agent outlives one failed pass
                LOG.exception("resource update of host %s failed; retrying", tracker.host)
            stop.wait(max(0.0, started + conf.update_resources_interval - time.monotonic()))
    finally:
        stop.set()
        # A heartbeat stuck on an unreachable database does not hold the
        # agent's exit (the thread is a daemon).
        beating.join(beat)
        if beating.is_alive():
            LOG.warning("heartbeat of host %s still waiting on the database; stopping "
                        "without it", tracker.host)


def _heartbeats(tracker: ResourceTracker, beat: float, stop: threading.Event) -> None:
    while not stop.wait(beat):
        try:
            tracker.compute.heartbeat(tracker.host)
        except Exception:  # a missed beat is retried at the next one
            LOG.exception("heartbeat of host %s failed; retrying", tracker.host)
