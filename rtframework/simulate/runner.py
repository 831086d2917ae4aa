"""The race soak: hosts running flat out, random operations, the checker.

Thread mode runs every host's periodic update in its own thread of this
process and the operations in the calling thread, through the hosts'
trackers (so a seed repeats the same operations in the same order).
Process mode (``processes=True``) runs each host as its own process over a
shared PostgreSQL or MySQL database and hands each operation to the
process of the host that runs it; with ``chaos`` that process may be
SIGKILLed while it runs (and restarted: it reconciles first), statements
fail like dropped connections, and a concurrent writer bumps consumer and
provider generations.

Either way the soak ends with a final restart of every host (reconcile
and two periodic runs each), then the checker and the audit, which must
find nothing.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import multiprocessing
import os
import queue
import random
import signal
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from rtframework import audit, invariants
from rtframework.compute import values as v
from rtframework.compute.store import ComputeStore, sync_schema
from rtframework.placement.backend import load_backend
from rtframework.placement.sql import backend as sql_backend
from rtframework.simulate import chaos, ops, spread
from rtframework.simulate.hosts import Faults, Host, Settings, build_conf, process_main
from rtframework.simulate.monitor import Monitor, Observations

LOG = logging.getLogger(__name__)

OP_TIMEOUT = 120.0


@dataclass(frozen=True)
class Options:
    hosts: int = 10
    operations: int = 500
    seed: int | None = None
    strategy: str = "migration"
    processes: bool = False
    chaos: bool = False
    database_url: str | None = None
    state_path: str | None = None
    # Host i names the i % n-th host of a multi-host database URL first
    # (the multi-writer set-up of a Galera cluster; see simulate.spread).
    spread_hosts: bool = False
    recheck_delay: float = 0.3
    check_interval: float = 0.1
    # Pause between two periodic runs of a host thread: SQLite has one
    # writer at a time, and hosts writing back to back starve the operations.
    periodic_pause: float = 0.05
    kill_rate: float = 0.08  # chance of a SIGKILL during (or between) operations
    db_fault_rate: float = 0.003  # share of statements that fail (chaos)
    bump_interval: float = 0.02  # seconds between concurrent generation bumps (chaos)
    vcpus: int = 8
    memory_mb: int = 8192
    disk_gb: int = 200
    progress: bool = True
    quiet_hosts: bool = True


@dataclass
class Result:
    options: Options
    seed: int
    ops: list[ops.Op] = field(default_factory=list)
    outcomes: collections.Counter = field(default_factory=collections.Counter)  # (kind, out)
    conflicts: int = 0
    kills: int = 0
    bumps: int = 0
    observations: Observations = field(default_factory=Observations)
    transient: collections.Counter = field(default_factory=collections.Counter)
    final: list[invariants.Violation] = field(default_factory=list)
    wall_time: float = 0.0
    started_at: float = 0.0  # time.monotonic() at the start
    kill_marks: list[tuple[float, str]] = field(default_factory=list)  # (monotonic, host)

    @property
    def violations(self) -> list[invariants.Violation]:
        return list(self.observations.violations) + self.final

    @property
    def errors(self) -> int:
        return sum(n for (_, outcome), n in self.outcomes.items() if outcome.startswith("error"))


def settings_for(options: Options, state_path: str) -> list[tuple]:
    url = options.database_url
    if url is None:
        url_c = f"sqlite:///{os.path.join(state_path, 'compute.sqlite')}"
        url_p = f"sqlite:///{os.path.join(state_path, 'placement.sqlite')}"
    else:
        url_c = url_p = url
    # A host process has two threads (periodic, operations) on one engine:
    # two connections each, or 20 hosts exhaust a server's 100 clients.
    pool, overflow = (options.hosts + 5, 10) if not options.processes else (2, 0)
    return [
        (None, "state_path", state_path),
        (None, "compute_driver", "fake"),
        (None, "reserved_host_memory_mb", 0),
        # Only a forced-down host counts as down: a killed host process is
        # not evacuated behind the soak's back.
        (None, "service_down_time", 86400),
        ("database", "connection", url_c),
        ("placement_database", "connection", url_p),
        ("database", "pool_size", pool),
        ("placement_database", "pool_size", pool),
        ("database", "max_overflow", overflow),
        ("placement_database", "max_overflow", overflow),
        ("placement", "backend", "sql"),
        ("placement", "move_claim_strategy", options.strategy),
        ("fake_driver", "vcpus", options.vcpus),
        ("fake_driver", "memory_mb", options.memory_mb),
        ("fake_driver", "disk_gb", options.disk_gb),
        ("fake_driver", "nodes", []),
    ]


def _no_sync(settings: Settings) -> list[tuple]:
    return [*settings, ("database", "auto_sync", False),
            ("placement_database", "auto_sync", False)]


class _Counter:
    def __init__(self) -> None:
        self.value = 0
        self._lock = threading.Lock()

    def __call__(self) -> None:
        with self._lock:
            self.value += 1


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
            spread.check(options.database_url)
        self.options = options
        self.seed = options.seed if options.seed is not None else random.randrange(2**31)
        self.rng = random.Random(self.seed)
        self.chaos_rng = random.Random(self.seed + 1)
        self.names = [f"host-{n:02d}" for n in range(options.hosts)]
        self.result = Result(options, self.seed)

    # -- common --------------------------------------------------------------
    def run(self, progress: Callable[[ops.Op, str], None] | None = None) -> Result:
        started = self.result.started_at = time.monotonic()
        with self._state_path() as state_path:
            self.settings = settings_for(self.options, state_path)
            self.conf = build_conf(self.settings)
            sync_schema(self.conf)
            sql_backend.sync_schema(self.conf)
            self.backend = load_backend(build_conf(_no_sync(self.settings)))
            self.store = ComputeStore.from_conf(build_conf(_no_sync(self.settings)))
            for engine in (self.backend.engine, self.store.engine):
                chaos.relax_durability(engine)
            try:
                if self.options.processes:
                    self._run_processes(progress)
                else:
                    self._run_threads(progress)
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

    def _monitor(self) -> Monitor:
        return Monitor(lambda: invariants.take_snapshot(self.backend, self.store),
                       recheck_delay=self.options.recheck_delay,
                       interval=self.options.check_interval,
                       restarts=self._restarts if self.options.processes else None)

    def _restarts(self) -> tuple[dict[str, int], set[str]]:
        """Each host's restart count so far, and the hosts down right now
        (killed, or started and not ready yet)."""
        return dict(self._epochs), set(self._down_hosts)

    def _view(self, down: frozenset[str] = frozenset()) -> ops.View:
        return ops.View(
            hosts=self.names,
            instances=self.store.list_instances(
                vm_states=[s for s in v.VM_STATES if s != v.DELETED]),
            migrations=self.store.list_migrations(statuses=v.UNFINISHED_MIGRATION_STATUSES),
            down=down)

    def _bumper(self, stop: threading.Event) -> None:
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

    def _final_check(self) -> None:
        # Every host has restarted and settled: nothing may be in flight, so
        # an operation left in the middle counts however recent.
        found = invariants.check(self.backend, self.store,
                                 recheck_delay=self.options.recheck_delay, stale_after=0)
        found += [f for f in audit.audit(self.backend, self.store, recheck_delay=-1,
                                         stale_after=0)
                  if f not in found]
        self.result.final = found

    def _host_settings(self, name: str) -> Settings:
        settings = _no_sync(self.settings)
        if not self.options.spread_hosts:
            return settings
        return spread.host_settings(settings, self.options.database_url,
                                    self.names.index(name))

    def _record(self, op: ops.Op, outcome: str,
                progress: Callable[[ops.Op, str], None] | None) -> None:
        self.result.ops.append(op)
        self.result.outcomes[(op.kind, outcome.split(":")[0])] += 1
        if outcome.startswith("error"):
            LOG.error("operation %d %s: %s", op.number, op.kind, outcome)
        if progress is not None:
            progress(op, outcome)

    # -- thread mode -----------------------------------------------------------
    def _run_threads(self, progress) -> None:
        conflicts = _Counter()
        faults = Faults(self.options.db_fault_rate if self.options.chaos else 0.0, self.seed)
        drivers: dict = {}
        hosts = {name: Host(build_conf(self._host_settings(name)), name, conflicts, faults,
                            drivers) for name in self.names}
        for host in hosts.values():
            host.periodic()
        stop = threading.Event()
        paused: set[str] = set()

        def loop(host: Host) -> None:
            while not stop.is_set():
                if host.name in paused:
                    time.sleep(0.01)
                    continue
                host.periodic()
                stop.wait(self.options.periodic_pause)

        def host_down(name: str) -> None:
            paused.add(name)
            with hosts[name].pass_lock:  # its current pass ends first
                self.store.set_forced_down(name, True)

        def host_up(name: str) -> None:
            self.store.set_forced_down(name, False)
            hosts[name].reconcile()  # what the returning host does first
            paused.discard(name)

        threads = [threading.Thread(target=loop, args=(h,), name=f"periodic-{h.name}",
                                    daemon=True) for h in hosts.values()]
        if self.options.chaos:
            threads.append(threading.Thread(target=self._bumper, args=(stop,), daemon=True))
        monitor = self._monitor()
        for thread in threads:
            thread.start()
        monitor.start()
        trackers = {name: h.tracker for name, h in hosts.items()}
        try:
            for number in range(self.options.operations):
                op = ops.choose(self.rng, number, self._view())
                host = hosts[op.executor]
                env = ops.HostEnv(host.ctx, trackers, host_down, host_up)
                self._record(op, host.execute(op, env), progress)
        finally:
            stop.set()
            for thread in threads:
                thread.join()
            monitor.stop()
        for host in hosts.values():
            host.faults_on = False
        for host in hosts.values():  # the final restart
            host.reconcile()
        for _ in range(2):
            for host in hosts.values():
                host.periodic()
        self.result.conflicts = conflicts.value
        self.result.observations = monitor.observations
        self.result.transient = monitor.transient
        self._final_check()
        for host in hosts.values():
            host.close()

    # -- process mode ------------------------------------------------------------
    def _run_processes(self, progress) -> None:
        # A fork server with the framework imported already starts (and
        # restarts) host processes in a fraction of a spawn's time, and like
        # spawn it never forks this process's threads and open connections.
        mp = multiprocessing.get_context("forkserver")
        mp.set_forkserver_preload(["rtframework.simulate.hosts"])
        self._mp = mp
        # One results queue per host process, new at every start: a process
        # killed while it writes to a queue leaves the queue's lock taken, and
        # a queue shared by all hosts would then block every other host.
        self._results: dict[str, multiprocessing.queues.Queue] = {}
        self._conflicts = mp.Value("i", 0)
        self._inboxes = {name: mp.Queue() for name in self.names}
        self._procs: dict[str, multiprocessing.Process] = {}
        self._faults = Faults(self.options.db_fault_rate if self.options.chaos else 0.0,
                              self.seed)
        self._pending: dict[str, int] = {}  # host -> op number it runs
        self._epochs: dict[str, int] = collections.Counter()  # host -> kills and starts
        self._down_hosts: set[str] = set()
        self._done: dict[int, str] = {}
        for name in self.names:
            self._start(name)
        self._wait_ready(self.names)
        stop = threading.Event()
        bumper = None
        if self.options.chaos:
            bumper = threading.Thread(target=self._bumper, args=(stop,), daemon=True)
            bumper.start()
        monitor = self._monitor()
        monitor.start()
        down: set[str] = set()
        try:
            for number in range(self.options.operations):
                op = ops.choose(self.rng, number, self._view(frozenset(down)))
                self._record(op, self._dispatch(op, down), progress)
                if self.options.chaos and self.chaos_rng.random() < self.options.kill_rate / 3:
                    # A kill between operations: mid periodic run.
                    victim = self.chaos_rng.choice(self.names)
                    self._kill(victim)
                    self._start(victim)
                    self._wait_ready([victim])
        finally:
            stop.set()
            if bumper is not None:
                bumper.join()
            monitor.stop()
        # The final restart: no faults, every host reconciles and heals.
        self._faults = Faults(0.0, self.seed)
        for name in self.names:
            self._kill(name)
        for name in self.names:
            self._start(name)
        self._wait_ready(self.names, periodic=2)
        for name in self.names:
            self._inboxes[name].put(None)
        for proc in self._procs.values():
            proc.join(timeout=60)
        self.result.conflicts = self._conflicts.value
        self.result.observations = monitor.observations
        self.result.transient = monitor.transient
        self._final_check()

    def _start(self, name: str) -> None:
        # A fresh inbox: what the killed process had not read is gone with it.
        self._inboxes[name] = self._mp.Queue()
        self._results[name] = self._mp.Queue()
        proc = self._mp.Process(
            target=process_main, name=f"rtf-{name}",
            args=(self._host_settings(name), name, self._inboxes[name], self._results[name],
                  self._conflicts, self._faults, self.options.quiet_hosts,
                  self.options.periodic_pause, os.getpid()),
            daemon=True)
        self._down_hosts.add(name)
        self._epochs[name] += 1
        proc.start()
        self._procs[name] = proc

    def _kill(self, name: str) -> None:
        proc = self._procs[name]
        self._down_hosts.add(name)
        self._epochs[name] += 1
        if proc.is_alive():
            os.kill(proc.pid, signal.SIGKILL)
            self.result.kills += 1
            self.result.kill_marks.append((time.monotonic(), name))
        proc.join()
        self._pending.pop(name, None)

    def _wait_ready(self, names, periodic: int = 0) -> None:
        waiting = {name: proc for name, proc in self._procs.items() if name in names}
        ready: set[str] = set()
        passes: dict[str, int] = {}
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            if ready >= set(waiting) and all(passes.get(n, 0) >= periodic for n in waiting):
                return
            for name, proc in waiting.items():
                if not proc.is_alive() and name not in ready:
                    raise RuntimeError(f"host process {name} died at start "
                                       f"(exit {proc.exitcode})")
            self._read_result(1.0, ready, passes)
        raise RuntimeError(f"hosts not ready after 300s: {sorted(set(waiting) - ready)}")

    def _next_result(self):
        for results in list(self._results.values()):
            try:
                return results.get_nowait()
            except queue.Empty:
                continue
        return None

    def _read_result(self, timeout: float, ready: set | None = None,
                     passes: dict | None = None) -> None:
        deadline = time.monotonic() + timeout
        while True:
            item = self._next_result()
            if item is not None:
                break
            if time.monotonic() >= deadline:
                return
            time.sleep(0.005)
        kind, name, payload = item
        if kind == "ready":
            self._down_hosts.discard(name)
            self._epochs[name] += 1
            if ready is not None:
                ready.add(name)
        elif kind == "periodic" and passes is not None:
            passes[name] = max(passes.get(name, 0), payload)
        elif kind == "done":
            number, outcome = payload
            self._done[number] = outcome

    def _dispatch(self, op: ops.Op, down: set[str]) -> str:
        """Hand ``op`` to its host's process and wait; chaos may kill it."""
        source = op.target if op.kind == ops.EVACUATE else None
        if source:
            # The source goes down for real: killed and marked down.
            self._kill(source)
            self.store.set_forced_down(source, True)
            down.add(source)
        try:
            self._pending[op.executor] = op.number
            self._inboxes[op.executor].put(op)
            kill_at = None
            if self.options.chaos and op.kind in ops.KILLABLE and \
                    self.chaos_rng.random() < self.options.kill_rate:
                kill_at = time.monotonic() + self.chaos_rng.uniform(0.0, 0.05)
            deadline = time.monotonic() + OP_TIMEOUT
            while op.number not in self._done:
                if kill_at is not None and time.monotonic() >= kill_at:
                    self._kill(op.executor)
                    self._start(op.executor)
                    self._wait_ready([op.executor])
                    return "interrupted"
                if time.monotonic() > deadline:
                    raise RuntimeError(f"operation {op.number} ({op.kind}) on {op.executor} "
                                       f"did not finish in {OP_TIMEOUT:.0f}s")
                if not self._procs[op.executor].is_alive():
                    self._start(op.executor)
                    self._wait_ready([op.executor])
                    return "error: host process died"
                self._read_result(0.005 if kill_at else 0.2)
            return self._done.pop(op.number)
        finally:
            self._pending.pop(op.executor, None)
            if source:
                self.store.set_forced_down(source, False)
                down.discard(source)
                self._start(source)  # it reconciles: removes its evacuated half
                self._wait_ready([source])
