"""Claim cycles driven from several OS processes, each with its own backend.

This gives the ``sql`` side the same process parallelism as a Placement
served by several worker processes: K clients are spread round-robin over
P processes (threads within a process), all start at one barrier, and the
rate is the sum of the processes' rates.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import time
from types import TracebackType

from benchmarks.load import Throughput


def _worker(url: str, work_dir: str, tasks, results, barrier) -> None:
    # Imported here: the child is a fresh interpreter (spawn).
    from benchmarks import claims
    from benchmarks import environment as env
    from benchmarks.load import run_clients

    env.quiet_logs()
    backend = env.sql_backend(work_dir, url)
    try:
        while (task := tasks.get()) is not None:
            pairs, seconds = task
            ops = [lambda p=p: claims.cycle(backend, *p) for p in pairs]
            barrier.wait()
            results.put(run_clients(ops, seconds) if ops else Throughput(0, 0, seconds))
    finally:
        backend.close()


class Pool:
    """``processes`` long-lived worker processes on the database ``url``."""

    def __init__(self, processes: int, work_dir: str, url: str) -> None:
        context = multiprocessing.get_context("spawn")
        self._tasks = [context.Queue() for _ in range(processes)]
        self._results = context.Queue()
        # Handed over at start: a barrier cannot travel through a queue.
        # Kept referenced: the children open it by name after start.
        self._barrier = barrier = context.Barrier(processes)
        self._procs = [
            context.Process(target=_worker, args=(url, os.path.join(work_dir, f"proc-{i}"),
                                                  self._tasks[i], self._results, barrier),
                            daemon=True)
            for i in range(processes)]
        for proc in self._procs:
            proc.start()

    def run(self, pairs: list[tuple[str, str]], seconds: float) -> Throughput:
        """One round: client i works on ``pairs[i]`` in process i % P."""
        count = len(self._procs)
        for i, tasks in enumerate(self._tasks):
            tasks.put((pairs[i::count], seconds))
        found = [self._result(seconds + 120) for _ in range(count)]
        return Throughput(
            operations=round(sum(r.per_second for r in found) * seconds),
            errors=sum(r.errors for r in found), seconds=seconds,
            first_error=next((r.first_error for r in found if r.errors), ""))

    def _result(self, timeout: float) -> Throughput:
        deadline = time.monotonic() + timeout
        while True:
            try:
                return self._results.get(timeout=1)
            except queue.Empty:
                dead = [p.exitcode for p in self._procs if not p.is_alive()]
                if dead or time.monotonic() > deadline:
                    raise RuntimeError(
                        f"claims worker process gone (exit codes {dead}) or silent for "
                        f"{timeout:.0f}s") from None

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        for tasks in self._tasks:
            tasks.put(None)
        for proc in self._procs:
            proc.join(timeout=30)
            if proc.is_alive():
                proc.kill()
