"""One simulated compute host: its configuration, tracker and loops.

A host runs its periodic resource update as fast as it can, and the
operations the driver loop gives it. In process mode :func:`process_main`
is the whole life of a host process: reconcile the moves a kill
interrupted (as ``rtf compute run`` does at start), then both loops.
"""

from __future__ import annotations

import logging
import os
import random
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from oslo_config import cfg

from rtframework import conf as rtconf
from rtframework import history, instance_recovery
from rtframework.compute.store import ComputeStore
from rtframework.moves.context import MoveContext
from rtframework.placement.backend import load_backend
from rtframework.simulate import chaos, ops
from rtframework.tracker import ResourceTracker
from rtframework_drivers.fake.driver import FakeDriver

LOG = logging.getLogger(__name__)

# (group or None for DEFAULT, option, value)
Settings = Sequence[tuple[str | None, str, Any]]


def build_conf(settings: Settings) -> cfg.ConfigOpts:
    """A fresh ConfigOpts with the fake driver's options and ``settings``."""
    conf = rtconf.new_conf()
    conf([], project="rtframework", default_config_files=[])
    FakeDriver.register_opts(conf)
    for group, name, value in settings:
        conf.set_override(name, value, group=group)
    return conf


@dataclass(frozen=True)
class Faults:
    """Fault injection of a host (chaos); rate 0 injects nothing."""

    db_fault_rate: float = 0.0
    seed: int = 0


class Host:
    """A host's tracker over its own engines (faults go only there)."""

    def __init__(self, conf: cfg.ConfigOpts, name: str, on_conflict, faults: Faults,
                 drivers: dict | None = None) -> None:
        self.name = name
        self.conf = conf
        self.backend = chaos.ConflictCounter(load_backend(conf), on_conflict)
        shared = conf.database.connection == conf.placement_database.connection
        # One database for both: one engine, half the connections.
        self.store = ComputeStore(self.backend.wrapped.engine) if shared \
            else ComputeStore.from_conf(conf)
        self.driver = FakeDriver(conf, name)
        self.tracker = ResourceTracker(conf, name, self.driver, self.backend, self.store)
        self.drivers = drivers if drivers is not None else {}
        self.drivers[name] = self.driver
        self.ctx = MoveContext(conf, self.backend, self.store, self.drivers)
        self.pass_lock = threading.Lock()
        self.passes = 0
        self.failed_passes = 0
        self.faults_on = faults.db_fault_rate > 0
        engines = dict.fromkeys((*self.backend.wrapped.engines, self.store.engine))
        for engine in engines:
            chaos.relax_durability(engine)
        if self.faults_on:
            rng = random.Random(f"{faults.seed}/{name}")
            for engine in engines:
                chaos.install_db_faults(engine, faults.db_fault_rate, rng, self._faulty)

    def _faulty(self) -> bool:
        return self.faults_on

    def reconcile(self, attempts: int = 5) -> None:
        """Finish or undo what a stop of this host interrupted, as ``rtf
        compute run`` does first (retried: faults)."""
        for attempt in range(attempts):
            try:
                with history.recording(self.store, self.name):
                    instance_recovery.recover_host(self.tracker, self.ctx)
                return
            except ops.EXPECTED as exc:
                LOG.warning("reconcile of %s failed (attempt %d): %s", self.name, attempt + 1,
                            exc)

    def heartbeat(self) -> None:
        """Report alive, as the agent's heartbeat thread does."""
        try:
            self.store.heartbeat(self.name)
        except ops.EXPECTED as exc:
            LOG.warning("heartbeat of %s failed: %s", self.name, exc)

    def periodic(self) -> None:
        with self.pass_lock, history.recording(self.store, self.name):
            try:
                self.tracker.update_available_resource()
            except ops.EXPECTED as exc:
                self.failed_passes += 1
                LOG.warning("periodic run of %s failed: %s", self.name, exc)
            except Exception:  # a bug; the host lives on, as its agent would
                self.failed_passes += 1
                LOG.exception("periodic run of %s failed unexpectedly", self.name)
            self.passes += 1

    def execute(self, op: ops.Op, env: ops.HostEnv) -> ops.Outcome:
        with history.recording(self.store, self.name):
            outcome = ops.execute(op, env)
            if outcome.kind == ops.FAULT:
                self.settle(op)
        return outcome

    def settle(self, op: ops.Op, attempts: int = 5) -> None:
        """The operation lost its database connection half-way: settle its
        instance as a restart would (faults may hit this too: retried)."""
        for attempt in range(attempts):
            try:
                uuid = op.instance
                if uuid is None:  # a boot: its record is named after the operation
                    found = [i for i in self.store.list_instances(host=self.name)
                             if i.name == ops.boot_name(op)]
                    if not found:
                        return
                    uuid = found[0].uuid
                instance_recovery.settle(self.tracker, self.ctx, uuid)
                return
            except ops.EXPECTED as exc:
                LOG.warning("settling operation %d on %s failed (attempt %d): %s",
                            op.number, self.name, attempt + 1, exc)

    def close(self) -> None:
        self.backend.wrapped.close()
        self.store.close()  # the same engine again when shared: harmless


def heartbeat_interval(down_after: float) -> float:
    """Seconds between two heartbeats: well within service_down_time (a
    quarter, for the soak's short ones; ``rtf compute run`` beats every
    third), so a busy host is not taken for dead."""
    return max(0.5, down_after / 4)


def _exit_with(parent: int) -> None:
    """End this host when the soak that started it is gone (a fork server's
    children outlive their real parent otherwise)."""
    while True:
        time.sleep(1.0)
        try:
            os.kill(parent, 0)
        except OSError:
            os._exit(1)


def process_main(settings: Settings, name: str, inbox, results, conflicts, faults: Faults,
                 quiet: bool, pause: float = 0.0, parent: int | None = None,
                 beat: float | None = None) -> None:
    """A host process: reconcile, then periodic runs and operations until
    told to stop; ``results`` is the write end of a pipe to the driver."""
    if parent is not None:
        threading.Thread(target=_exit_with, args=(parent,), daemon=True).start()
    logging.basicConfig(level=logging.ERROR if quiet else logging.WARNING,
                        format=f"%(asctime)s {name} %(levelname)s %(name)s: %(message)s")

    def on_conflict() -> None:
        with conflicts.get_lock():
            conflicts.value += 1

    sending = threading.Lock()  # two threads report on one pipe

    def report(kind: str, payload: Any) -> None:
        with sending:
            results.send((kind, name, payload))

    host = Host(build_conf(settings), name, on_conflict, faults)
    host.reconcile()
    host.periodic()
    report("ready", None)
    stop = threading.Event()

    def loop() -> None:
        while not stop.is_set():
            host.periodic()
            if host.passes <= 4:
                report("periodic", host.passes)
            stop.wait(pause)

    def heartbeats() -> None:
        while beat is not None and not stop.wait(beat):
            host.heartbeat()

    threading.Thread(target=loop, name=f"periodic-{name}", daemon=True).start()
    threading.Thread(target=heartbeats, name=f"heartbeat-{name}", daemon=True).start()
    env = ops.HostEnv(host.ctx, {name: host.tracker})
    while True:
        op = inbox.get()
        if op is None:
            break
        report("done", (op.number, host.execute(op, env)))
    stop.set()


def trackers(hosts: Mapping[str, Host]) -> dict[str, ResourceTracker]:
    return {name: h.tracker for name, h in hosts.items()}
