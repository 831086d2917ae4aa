"""What a soak is asked to do (:class:`Options`), what it found
(:class:`Result`), and the configuration its hosts share."""

from __future__ import annotations

import collections
import os
from dataclasses import dataclass, field

from rtframework import invariants
from rtframework.simulate import cloud, ops
from rtframework.simulate.hosts import Settings
from rtframework.simulate.monitor import Observations

# service_down_time when no outage is simulated: only a forced-down host
# counts as down, so a killed host process is never taken for dead.
NEVER_DOWN = 86400


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
    # (the multi-writer set-up of a Galera cluster; see simulate.dbnodes).
    spread_hosts: bool = False
    recheck_delay: float = 0.3
    check_interval: float = 0.1
    # Pause between two periodic runs of a host thread: SQLite has one
    # writer at a time, and hosts writing back to back starve the operations.
    periodic_pause: float = 0.05
    kill_rate: float = 0.08  # chance of a SIGKILL during (or between) operations
    db_fault_rate: float = 0.003  # share of statements that fail (chaos)
    bump_interval: float = 0.02  # seconds between concurrent generation bumps (chaos)
    # Chance, before each operation, that a host stops reporting (chaos):
    # once its heartbeat is older than service_down_time its instances are
    # evacuated, then it comes back and its restart recovery cleans up.
    outage_rate: float = 0.01
    service_down_time: int = 10  # seconds (only with outages)
    vcpus: int = 8
    memory_mb: int = 8192
    disk_gb: int = 200
    cloud: str = cloud.FLAT  # the hosts' shape: rtframework.simulate.cloud
    progress: bool = True
    quiet_hosts: bool = True

    @property
    def outages(self) -> bool:
        return self.chaos and self.outage_rate > 0

    @property
    def down_after(self) -> int:
        """The hosts' service_down_time."""
        return self.service_down_time if self.outages else NEVER_DOWN


@dataclass
class Result:
    options: Options
    seed: int
    ops: list[ops.Op] = field(default_factory=list)
    # (operation kind, outcome kind) -> how many
    outcomes: collections.Counter = field(default_factory=collections.Counter)
    conflicts: int = 0
    kills: int = 0
    bumps: int = 0
    outages: int = 0  # hosts that stopped reporting
    outage_returns: int = 0  # ... and came back
    # evacuations of an outage that its source host removed when it came back
    outage_cleaned: int = 0
    observations: Observations = field(default_factory=Observations)
    transient: collections.Counter = field(default_factory=collections.Counter)
    final: list[invariants.Violation] = field(default_factory=list)
    wall_time: float = 0.0
    started_at: float = 0.0  # time.monotonic() at the start
    kill_marks: list[tuple[float, str]] = field(default_factory=list)  # (monotonic, host)
    # (monotonic start, monotonic end or None, host) of every outage
    outage_marks: list[list] = field(default_factory=list)

    @property
    def violations(self) -> list[invariants.Violation]:
        return list(self.observations.violations) + self.final

    @property
    def errors(self) -> int:
        return sum(n for (_, outcome), n in self.outcomes.items() if outcome == ops.ERROR)


def settings_for(options: Options, state_path: str) -> list[tuple]:
    url = options.database_url
    if url is None:
        url_c = f"sqlite:///{os.path.join(state_path, 'compute.sqlite')}"
        url_p = f"sqlite:///{os.path.join(state_path, 'placement.sqlite')}"
    else:
        url_c = url_p = url
    # A host process has three threads (periodic, operations, heartbeat)
    # and on PostgreSQL two engines (allocation writes have their own): two
    # connections each at most, or 20 hosts exhaust a server's 100 clients
    # (20 hosts, 300 operations with kills: 99 at most, as with one engine
    # of three before; three each on two engines came to 118).
    pool, overflow = (options.hosts + 5, 10) if not options.processes else (2, 0)
    return [
        (None, "state_path", state_path),
        (None, "compute_driver", "fake"),
        (None, "reserved_host_memory_mb", 0),
        (None, "service_down_time", options.down_after),
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
        *cloud.settings(options.cloud),
    ]


def no_sync(settings: Settings) -> list[tuple]:
    return [*settings, ("database", "auto_sync", False),
            ("placement_database", "auto_sync", False)]
