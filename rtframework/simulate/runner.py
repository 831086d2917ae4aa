"""The race soak: hosts running flat out, random operations, the checker.

Thread mode (:mod:`rtframework.simulate.threads`) runs every host's
periodic update in its own thread of this process and the operations in
the calling thread, through the hosts' trackers (so a seed repeats the
same operations in the same order). Process mode
(:mod:`rtframework.simulate.processes`, ``processes=True``) runs each host
as its own process over a shared PostgreSQL or MySQL database and hands
each operation to the process of the host that runs it; with ``chaos``
that process may be SIGKILLed while it runs (and restarted: it reconciles
first), statements fail like dropped connections, and a concurrent writer
bumps consumer and provider generations. With ``chaos`` in either mode
hosts also go out for longer than ``service_down_time`` and have their
instances evacuated (:mod:`rtframework.simulate.outages`).

Either way the soak ends with a final restart of every host (reconcile
and two periodic runs each), then the checker and the audit, which must
find nothing.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import random
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping

from rtframework import audit, invariants
from rtframework.compute import values as v
from rtframework.compute.store import ComputeStore, sync_schema
from rtframework.placement.backend import load_backend
from rtframework.placement.sql import backend as sql_backend
from rtframework.simulate import chaos, cloud, dbnodes, ops
from rtframework.simulate.hosts import build_conf
from rtframework.simulate.monitor import Monitor
from rtframework.simulate.options import Options, Result, no_sync, settings_for
from rtframework.simulate.outages import Outages

__all__ = ["Options", "Result", "Soak"]

LOG = logging.getLogger(__name__)

Progress = Callable[[ops.Op, ops.Outcome], None]


# The soak's numbers a run makes sense with: (field, lowest, highest).
_BOUNDS = (
    ("hosts", 1, math.inf), ("operations", 1, math.inf),
    ("kill_rate", 0, 1), ("db_fault_rate", 0, 1), ("outage_rate", 0, 1),
    ("service_down_time", 1, math.inf), ("recheck_delay", 0, math.inf),
    ("periodic_pause", 0, math.inf), ("check_interval", 0, math.inf),
)


class Soak:
    """One soak run; :meth:`run` returns its :class:`Result`."""

    def __init__(self, options: Options) -> None:
        if options.processes and options.database_url is None:
            raise ValueError("process mode needs a shared PostgreSQL or MySQL database "
                             "(--database-url)")
        if options.database_url and options.database_url.startswith("sqlite") \
                and options.processes:
            raise ValueError("process mode needs PostgreSQL or MySQL, not SQLite")
        if options.spread_hosts:
            dbnodes.check(options.database_url)
        for name, low, high in _BOUNDS:
            value = getattr(options, name)
            if not low <= value <= high:
                flag = "--" + name.replace("_", "-")
                raise ValueError(f"{flag} must be from {low:g} to {high:g}, got {value:g}"
                                 if high != math.inf else
                                 f"{flag} must be at least {low:g}, got {value:g}")
        cloud.settings(options.cloud)  # a ValueError names the known shapes
        self.options = options
        self.seed = options.seed if options.seed is not None else random.randrange(2**31)
        self.rng = random.Random(self.seed)
        self.chaos_rng = random.Random(self.seed + 1)
        self.outage_rng = random.Random(self.seed + 2)
        self.names = [f"host-{n:02d}" for n in range(options.hosts)]
        self.result = Result(options, self.seed)

    def run(self, progress: Progress | None = None) -> Result:
        from rtframework.simulate import processes, threads

        started = self.result.started_at = time.monotonic()
        with self._state_path() as state_path:
            self.settings = settings_for(self.options, state_path)
            self.host_settings = no_sync(self.settings)
            self.conf = build_conf(self.settings)
            sync_schema(self.conf)
            sql_backend.sync_schema(self.conf)
            self.backend = load_backend(build_conf(self.host_settings))
            self.store = dbnodes.Steady(ComputeStore.from_conf(build_conf(self.host_settings)))
            for engine in (*self.backend.engines, self.store.engine):
                chaos.relax_durability(engine)
            cloud.prepare(self.backend, self.options.cloud, self.options.hosts,
                          self.options.disk_gb)
            try:
                if self.options.processes:
                    processes.ProcessMode(self).run(progress)
                else:
                    threads.run(self, progress)
            finally:
                self.backend.close()
                self.store.close()
        self.result.wall_time = time.monotonic() - started
        return self.result

    @contextlib.contextmanager
    def _state_path(self) -> Iterator[str]:
        if self.options.state_path:
            os.makedirs(self.options.state_path, exist_ok=True)
            yield self.options.state_path
            return
        with tempfile.TemporaryDirectory(prefix="rtf-soak-") as path:
            yield path

    # -- what both modes share -------------------------------------------------
    def settings_of(self, host: str) -> list[tuple]:
        """A host's settings: with ``spread_hosts`` its URL names its own node first."""
        if not self.options.spread_hosts:
            return self.host_settings
        return dbnodes.host_settings(self.host_settings, self.options.database_url,
                                     self.names.index(host))

    def monitor(self, restarts: Callable[[], tuple[Mapping[str, int], set[str]]] | None = None,
                ) -> Monitor:
        return Monitor(lambda: invariants.take_snapshot(self.backend, self.store),
                       recheck_delay=self.options.recheck_delay,
                       interval=self.options.check_interval, restarts=restarts)

    def outages(self, stop_host: Callable[[str], None],
                restart_host: Callable[[str], None]) -> Outages:
        return Outages(self.options, self.store, self.outage_rng, self.result, stop_host,
                       restart_host)

    def view(self, down: frozenset[str] = frozenset()) -> ops.View:
        return ops.View(
            hosts=self.names,
            instances=self.store.list_instances(
                vm_states=[s for s in v.VM_STATES if s != v.DELETED]),
            migrations=self.store.list_migrations(statuses=v.UNFINISHED_MIGRATION_STATUSES),
            down=down, flavors=cloud.flavors(self.options.cloud))

    def next_op(self, number: int, outages: Outages,
                down: frozenset[str] = frozenset()) -> ops.Op:
        """The next operation: an outage's evacuation if one is due, else a
        random one among the hosts that are up."""
        view = self.view(down | outages.hosts)
        if outages.update(view, down):
            view = self.view(down | outages.hosts)
        return outages.evacuation(number, view) or ops.choose(self.rng, number, view)

    def bumper(self, stop: threading.Event) -> None:
        """Concurrent no-op writes: generation conflicts for everyone else."""
        providers: list[str] = []
        while not stop.wait(self.options.bump_interval):
            try:
                if not providers or self.chaos_rng.random() < 0.05:
                    providers = [p.uuid for p in self.backend.list_providers()]
                consumers = [i.uuid for i in self.store.list_instances(vm_states=[v.ACTIVE])]
                if chaos.bump_generation(self.backend, self.chaos_rng, consumers, providers):
                    self.result.bumps += 1
            except Exception as exc:
                LOG.warning("generation bump failed: %s", exc)

    def final_check(self) -> None:
        # Every host has restarted and settled: nothing may be in flight, so
        # an operation left in the middle counts however recent.
        found = invariants.check(self.backend, self.store,
                                 recheck_delay=self.options.recheck_delay, stale_after=0)
        found += [f for f in audit.audit(self.backend, self.store, recheck_delay=-1,
                                         stale_after=0)
                  if f not in found]
        self.result.final = found

    def record(self, op: ops.Op, outcome: ops.Outcome, outages: Outages,
               progress: Progress | None) -> None:
        self.result.ops.append(op)
        self.result.outcomes[(op.kind, outcome.kind)] += 1
        outages.record(op, outcome)
        if outcome.kind == ops.ERROR:
            LOG.error("operation %d %s: %s", op.number, op.kind, outcome)
        if progress is not None:
            progress(op, outcome)
