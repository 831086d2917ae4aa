"""Process mode of the soak: every host a process over a shared database.

Each host process (:func:`rtframework.simulate.hosts.process_main`)
reconciles, then runs its periodic update, its heartbeat and the
operations it is handed. The driver loop here hands each operation to the
process of the host that runs it and waits for its outcome; with chaos it
may SIGKILL that process while it runs (or another between operations)
and start it again, and hosts go out for longer than service_down_time
(:mod:`rtframework.simulate.outages`).
"""

from __future__ import annotations

import collections
import multiprocessing
import os
import signal
import threading
import time
from multiprocessing.connection import Connection, wait
from typing import TYPE_CHECKING

from rtframework.simulate import ops
from rtframework.simulate.hosts import Faults, heartbeat_interval, process_main

if TYPE_CHECKING:
    from rtframework.simulate.runner import Progress, Soak

OP_TIMEOUT = 120.0


class ProcessMode:
    """The host processes of one soak, and the loop that drives them."""

    def __init__(self, soak: Soak) -> None:
        self.soak = soak
        self.options = soak.options
        self.result = soak.result
        # A fork server with the framework imported already starts (and
        # restarts) host processes in a fraction of a spawn's time, and like
        # spawn it never forks this process's threads and open connections.
        self._mp = multiprocessing.get_context("forkserver")
        self._mp.set_forkserver_preload(["rtframework.simulate.hosts"])
        # One results pipe per host process, new at every start: the driver
        # waits on all of them at once (no polling), and what a killed
        # process had not sent is gone with it.
        self._results: dict[str, Connection | None] = {}
        self._conflicts = self._mp.Value("i", 0)
        self._inboxes = {name: self._mp.Queue() for name in soak.names}
        self._procs: dict[str, multiprocessing.Process] = {}
        self._faults = Faults(self.options.db_fault_rate if self.options.chaos else 0.0,
                              soak.seed)
        self._pending: dict[str, int] = {}  # host -> op number it runs
        self._epochs: dict[str, int] = collections.Counter()  # host -> kills and starts
        self._down_hosts: set[str] = set()
        self._done: dict[int, ops.Outcome] = {}

    def restarts(self) -> tuple[dict[str, int], set[str]]:
        """Each host's restart count so far, and the hosts down right now
        (killed, or started and not ready yet)."""
        return dict(self._epochs), set(self._down_hosts)

    def run(self, progress: Progress | None) -> None:
        soak, options, chaos_rng = self.soak, self.options, self.soak.chaos_rng
        names = soak.names
        for name in names:
            self._start(name)
        self._wait_ready(names)
        stop = threading.Event()
        bumper = None
        if options.chaos:
            bumper = threading.Thread(target=soak.bumper, args=(stop,), daemon=True)
            bumper.start()
        monitor = soak.monitor(self.restarts)
        monitor.start()
        outages = soak.outages(lambda name: self._kill(name, count=False), self._restart)
        down: set[str] = set()
        try:
            for number in range(options.operations):
                op = soak.next_op(number, outages, frozenset(down))
                soak.record(op, self._dispatch(op, down), outages, progress)
                if options.chaos and chaos_rng.random() < options.kill_rate / 3:
                    # A kill between operations: mid periodic run (a host
                    # that is out has no process to kill).
                    victim = chaos_rng.choice(names)
                    if victim not in outages.hosts:
                        self._restart(victim)
            outages.finish()
        finally:
            stop.set()
            if bumper is not None:
                bumper.join()
            monitor.stop()
        # The final restart: no faults, every host reconciles and heals.
        self._faults = Faults(0.0, soak.seed)
        for name in names:
            self._kill(name)
        for name in names:
            self._start(name)
        self._wait_ready(names, periodic=2)
        for name in names:
            self._inboxes[name].put(None)
        for proc in self._procs.values():
            proc.join(timeout=60)
        self.result.conflicts = self._conflicts.value
        self.result.observations = monitor.observations
        self.result.transient = monitor.transient
        soak.final_check()

    def _restart(self, name: str) -> None:
        self._kill(name)
        self._start(name)
        self._wait_ready([name])

    def _start(self, name: str) -> None:
        # A fresh inbox: what the killed process had not read is gone with it.
        self._inboxes[name] = self._mp.Queue()
        old = self._results.get(name)
        if old is not None:
            old.close()
        reader, writer = self._mp.Pipe(duplex=False)
        self._results[name] = reader
        beat = heartbeat_interval(self.options.down_after) if self.options.outages else None
        proc = self._mp.Process(
            target=process_main, name=f"rtf-{name}",
            args=(self.soak.settings_of(name), name, self._inboxes[name], writer,
                  self._conflicts, self._faults, self.options.quiet_hosts,
                  self.options.periodic_pause, os.getpid(), beat),
            daemon=True)
        self._down_hosts.add(name)
        self._epochs[name] += 1
        proc.start()
        writer.close()  # the child's copy only: its death reads as end of file
        self._procs[name] = proc

    def _kill(self, name: str, count: bool = True) -> None:
        """SIGKILL ``name``'s process (if it lives); ``count``: a chaos kill."""
        proc = self._procs[name]
        self._down_hosts.add(name)
        self._epochs[name] += 1
        if proc.is_alive():
            os.kill(proc.pid, signal.SIGKILL)
            if count:
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

    def _read_result(self, timeout: float, ready: set | None = None,
                     passes: dict | None = None) -> None:
        """Handle what the host processes sent, waiting up to ``timeout``
        seconds for something to arrive."""
        readers = {conn: name for name, conn in self._results.items() if conn is not None}
        for conn in wait(list(readers), timeout):
            try:
                item = conn.recv()
            except (EOFError, OSError):  # its process died: nothing more comes
                conn.close()
                self._results[readers[conn]] = None
                continue
            self._handle(item, ready, passes)

    def _handle(self, item: tuple, ready: set | None, passes: dict | None) -> None:
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

    def _dispatch(self, op: ops.Op, down: set[str]) -> ops.Outcome:
        """Hand ``op`` to its host's process and wait; chaos may kill it."""
        source = op.target if op.kind == ops.EVACUATE else None
        if source:
            # The source goes down for real: killed and marked down.
            self._kill(source)
            self.soak.store.set_forced_down(source, True)
            down.add(source)
        try:
            self._pending[op.executor] = op.number
            self._inboxes[op.executor].put(op)
            kill_at = None
            if self.options.chaos and op.kind in ops.KILLABLE and \
                    self.soak.chaos_rng.random() < self.options.kill_rate:
                kill_at = time.monotonic() + self.soak.chaos_rng.uniform(0.0, 0.05)
            deadline = time.monotonic() + OP_TIMEOUT
            while op.number not in self._done:
                if kill_at is not None and time.monotonic() >= kill_at:
                    self._restart(op.executor)
                    return ops.Outcome(ops.INTERRUPTED)
                if time.monotonic() > deadline:
                    raise RuntimeError(f"operation {op.number} ({op.kind}) on {op.executor} "
                                       f"did not finish in {OP_TIMEOUT:.0f}s")
                if not self._procs[op.executor].is_alive():
                    self._start(op.executor)
                    self._wait_ready([op.executor])
                    return ops.Outcome(ops.ERROR, "host process died")
                self._read_result(0.005 if kill_at else 0.2)
            return self._done.pop(op.number)
        finally:
            self._pending.pop(op.executor, None)
            if source:
                self.soak.store.set_forced_down(source, False)
                down.discard(source)
                self._start(source)  # it reconciles: removes its evacuated half
                self._wait_ready([source])
