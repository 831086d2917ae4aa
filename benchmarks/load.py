"""K client threads calling one operation for a fixed time."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Throughput:
    operations: int
    errors: int
    seconds: float
    first_error: str = ""

    @property
    def per_second(self) -> float:
        return self.operations / self.seconds if self.seconds else 0.0


def run_clients(operations: Sequence[Callable[[], None]], seconds: float) -> Throughput:
    """Run ``operations[i]`` in a loop on thread i for ``seconds``.

    All threads start together at a barrier; the clock stops when the last
    one has finished its operation in flight, so every counted operation
    lies inside the measured time.
    """
    clients = len(operations)
    counts, errors = [0] * clients, [0] * clients
    first_error: list[str] = []
    start = threading.Barrier(clients + 1)
    stop = threading.Event()

    def client(i: int) -> None:
        op = operations[i]
        start.wait()
        while not stop.is_set():
            try:
                op()
            except Exception as exc:  # noqa: BLE001 - counted and reported
                errors[i] += 1
                if not first_error:
                    first_error.append(f"{type(exc).__name__}: {exc}"[:300])
            else:
                counts[i] += 1

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(clients)]
    for thread in threads:
        thread.start()
    start.wait()
    began = time.perf_counter()
    time.sleep(seconds)
    stop.set()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - began
    return Throughput(sum(counts), sum(errors), elapsed, first_error[0] if first_error else "")
