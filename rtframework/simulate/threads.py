"""Thread mode of the soak: every host in a thread of this process.

Each host runs its periodic update and its heartbeat in threads of its
own; the operations run one after another in the calling thread, through
the hosts' trackers, so that a seed repeats the same operations in the
same order. A host that is out (an evacuation's source, an outage) stops
its periodic runs and heartbeats until it comes back and reconciles.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

from rtframework.simulate import ops
from rtframework.simulate.hosts import Faults, Host, build_conf, heartbeat_interval, trackers

if TYPE_CHECKING:
    from rtframework.simulate.runner import Progress, Soak


class _Counter:
    def __init__(self) -> None:
        self.value = 0
        self._lock = threading.Lock()

    def __call__(self) -> None:
        with self._lock:
            self.value += 1


def run(soak: Soak, progress: Progress | None) -> None:
    options, result = soak.options, soak.result
    conflicts = _Counter()
    faults = Faults(options.db_fault_rate if options.chaos else 0.0, soak.seed)
    drivers: dict = {}
    hosts = {name: Host(build_conf(soak.settings_of(name)), name, conflicts, faults, drivers)
             for name in soak.names}
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
            stop.wait(options.periodic_pause)

    def beat(host: Host) -> None:
        while not stop.wait(heartbeat_interval(options.down_after)):
            if host.name not in paused:
                host.heartbeat()

    def stop_host(name: str) -> None:
        paused.add(name)
        with hosts[name].pass_lock:  # its current pass ends first
            pass

    def host_down(name: str) -> None:  # an evacuation's source: forced down
        paused.add(name)
        with hosts[name].pass_lock:  # its current pass ends first
            soak.store.set_forced_down(name, True)

    def restart_host(name: str) -> None:
        hosts[name].reconcile()  # what the returning host does first
        paused.discard(name)

    def host_up(name: str) -> None:
        soak.store.set_forced_down(name, False)
        restart_host(name)

    threads = [threading.Thread(target=loop, args=(h,), name=f"periodic-{h.name}",
                                daemon=True) for h in hosts.values()]
    threads += [threading.Thread(target=beat, args=(h,), name=f"heartbeat-{h.name}",
                                 daemon=True) for h in hosts.values()]
    if options.chaos:
        threads.append(threading.Thread(target=soak.bumper, args=(stop,), daemon=True))
    monitor = soak.monitor()
    outages = soak.outages(stop_host, restart_host)
    for thread in threads:
        thread.start()
    monitor.start()
    by_host = trackers(hosts)
    try:
        for number in range(options.operations):
            op = soak.next_op(number, outages)
            host = hosts[op.executor]
            env = ops.HostEnv(host.ctx, by_host, host_down, host_up)
            soak.record(op, host.execute(op, env), outages, progress)
        outages.finish()
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
    result.conflicts = conflicts.value
    result.observations = monitor.observations
    result.transient = monitor.transient
    soak.final_check()
    for host in hosts.values():
        host.close()
