"""Host outages in a chaos soak: a host stops reporting, its instances are
evacuated once it counts as down, then it comes back.

Before each operation a host may stop (about ``outage_rate`` of the
operations; at most one host in ten at a time, and two hosts always stay
up): its process is killed, or its thread stops its periodic runs and
heartbeats. The soak goes on with the other hosts. Once the host's last
heartbeat is older than ``service_down_time`` (``rtf services list``
would show it down: nothing forces it), every instance it ran that may be
evacuated is evacuated to another host, one operation each, through the
ordinary evacuate path and its preconditions. Then the host comes back:
its restart recovery removes the source half of each evacuation, and the
soak counts the evacuations whose record it closed.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from rtframework.compute import values as v
from rtframework.compute.store import ComputeStore
from rtframework.moves import state
from rtframework.simulate import ops
from rtframework.simulate.options import Options, Result

LOG = logging.getLogger(__name__)


@dataclass
class Outage:
    host: str
    started: float  # time.monotonic()
    tried: set[str] = field(default_factory=set)  # instances an evacuation was tried for
    evacuated: set[str] = field(default_factory=set)  # ... and done
    mark: list = field(default_factory=list)  # its row in Result.outage_marks


class Outages:
    """The outages of one soak; the runner says how a host stops and returns."""

    def __init__(self, options: Options, store: ComputeStore, rng: random.Random,
                 result: Result, stop_host: Callable[[str], None],
                 restart_host: Callable[[str], None]) -> None:
        self.rate = options.outage_rate if options.outages else 0.0
        self.down_after = options.down_after
        self.limit = max(1, options.hosts // 10)
        self.store = store
        self.rng = rng
        self.result = result
        self._stop_host = stop_host
        self._restart_host = restart_host
        self.current: dict[str, Outage] = {}

    @property
    def hosts(self) -> frozenset[str]:
        """The hosts out right now."""
        return frozenset(self.current)

    def _down(self, host: str) -> bool:
        """Down as the evacuate precondition sees it: no heartbeat for longer
        than service_down_time."""
        return not self.store.is_host_up(host, self.down_after)

    def _evacuable(self, outage: Outage, view: ops.View) -> list[v.Instance]:
        moving = {m.instance_uuid for m in view.migrations}
        return [i for i in view.instances if i.host == outage.host
                and i.vm_state in (v.ACTIVE, v.ERROR) and i.task_state is None
                and i.uuid not in moving and i.uuid not in outage.tried]

    def update(self, view: ops.View, unavailable: frozenset[str] = frozenset()) -> bool:
        """Bring back the hosts whose instances were all tried, maybe stop
        one more; True if the set of hosts out changed."""
        changed = False
        for host, outage in list(self.current.items()):
            if self._down(host) and not self._evacuable(outage, view):
                self._end(outage)
                changed = True
        if self.rate and self.rng.random() < self.rate and len(self.current) < self.limit:
            up = [h for h in view.hosts if h not in self.current and h not in unavailable]
            if len(up) > 2:
                self._begin(self.rng.choice(sorted(up)))
                changed = True
        return changed

    def evacuation(self, number: int, view: ops.View) -> ops.Op | None:
        """An evacuation of an instance of a host that counts as down, if
        any is left to try."""
        for host in sorted(self.current):
            outage = self.current[host]
            candidates = self._evacuable(outage, view)
            if not candidates or not self._down(host):
                continue
            destinations = [h for h in view.up if h not in self.current]
            if not destinations:
                return None
            instance = self.rng.choice(sorted(candidates, key=lambda i: i.uuid))
            outage.tried.add(instance.uuid)
            # The destination rebuilds the guest, so it runs the operation.
            return ops.Op(number, ops.OUTAGE_EVACUATE, self.rng.choice(sorted(destinations)),
                          instance=instance.uuid, target=host)
        return None

    def record(self, op: ops.Op, outcome: ops.Outcome) -> None:
        if op.kind == ops.OUTAGE_EVACUATE and outcome.kind == ops.OK and op.target in self.current:
            self.current[op.target].evacuated.add(op.instance or "")

    def finish(self) -> None:
        """Every host still out comes back."""
        for outage in list(self.current.values()):
            self._end(outage)

    def _begin(self, host: str) -> None:
        LOG.info("outage: host %s stops reporting", host)
        self._stop_host(host)
        outage = Outage(host, time.monotonic())
        outage.mark = [outage.started, None, host]
        self.result.outage_marks.append(outage.mark)
        self.current[host] = outage
        self.result.outages += 1

    def _end(self, outage: Outage) -> None:
        LOG.info("outage: host %s comes back (%d evacuated)", outage.host,
                 len(outage.evacuated))
        self._restart_host(outage.host)  # its restart recovery runs first
        del self.current[outage.host]
        outage.mark[1] = time.monotonic()
        self.result.outage_returns += 1
        self.result.outage_cleaned += self._cleaned(outage)

    def _cleaned(self, outage: Outage) -> int:
        """Evacuations of ``outage`` whose record the returning source closed."""
        closed = 0
        for uuid in outage.evacuated:
            if any(m.migration_type == state.EVACUATION and m.source_host == outage.host
                   and m.status == state.DONE
                   for m in self.store.list_migrations(instance_uuid=uuid)):
                closed += 1
        return closed
