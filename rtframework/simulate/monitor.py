"""The invariant checker running beside a soak, and what it samples.

Every pass takes a snapshot (:func:`rtframework.invariants.take_snapshot`);
findings are confirmed by a second snapshot ``recheck_delay`` later, as
``rtf check`` does. Consecutive snapshots also give each host's used VCPU
over time (the plot) and the allocation flips: an instance that is ACTIVE,
idle and on the same host in two snapshots, whose record did not change
in between, yet whose set of providers did (a heal taking an allocation
away and something putting it back, for instance).
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from rtframework import invariants
from rtframework.compute import values as v

LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class HostSample:
    """One host's nodes at one snapshot, per resource class."""

    used: Mapping[str, int]
    capacity: Mapping[str, int]
    # The part of ``used`` held for moves in flight (either half of a
    # double claim: the instance or its migration consumer).
    moving: Mapping[str, int]


@dataclass
class Observations:
    violations: dict[invariants.Violation, int] = field(default_factory=dict)  # -> times seen
    flips: collections.Counter = field(default_factory=collections.Counter)  # instance -> n
    samples: list[tuple[float, dict[str, int]]] = field(default_factory=list)  # (t, host->vcpu)
    # (time.monotonic() of the snapshot, host -> HostSample)
    timeline: list[tuple[float, dict[str, HostSample]]] = field(default_factory=list)
    # (time.monotonic(), host, kind) of every counted violation
    violation_marks: list[tuple[float, str, str]] = field(default_factory=list)
    passes: int = 0
    errors: int = 0


def _resting(snap: invariants.Snapshot) -> dict[str, tuple]:
    """instance -> (record fingerprint, provider set) for ACTIVE idle ones."""
    out = {}
    for instance in snap.instances.values():
        if instance.vm_state != v.ACTIVE or instance.task_state is not None \
                or snap.moves_of(instance.uuid):
            continue
        out[instance.uuid] = ((instance.host, instance.node, instance.updated_at),
                              frozenset(snap.held.get(instance.uuid, {})))
    return out


def vcpu_by_host(snap: invariants.Snapshot) -> dict[str, int]:
    used: dict[str, int] = collections.defaultdict(int)
    for (host, _node), root in snap.node_roots.items():
        used[host] += int(snap.usages.get(root, {}).get("VCPU", 0))
    return dict(used)


def host_samples(snap: invariants.Snapshot) -> dict[str, HostSample]:
    """Used, capacity and move-held amounts per class of each host's nodes."""
    host_of_root = {root: host for (host, _node), root in snap.node_roots.items()}
    moving_consumers = set()
    for m in snap.migrations.values():
        if not m.finished:
            moving_consumers |= {m.uuid, m.instance_uuid}
    used: dict = collections.defaultdict(lambda: collections.defaultdict(int))
    capacity: dict = collections.defaultdict(lambda: collections.defaultdict(int))
    moving: dict = collections.defaultdict(lambda: collections.defaultdict(int))
    for provider, root in snap.root_of.items():
        host = host_of_root.get(root)
        if host is None:
            continue
        for rc, inventory in snap.inventories.get(provider, {}).items():
            capacity[host][rc] += int(inventory.capacity)
            used[host][rc] += int(snap.usages.get(provider, {}).get(rc, 0))
    for consumer in moving_consumers:
        for provider, resources in snap.held.get(consumer, {}).items():
            host = host_of_root.get(snap.root_of.get(provider, provider))
            if host is not None:
                for rc, amount in resources.items():
                    moving[host][rc] += amount
    return {host: HostSample(dict(used[host]), dict(capacity[host]), dict(moving[host]))
            for host in set(host_of_root.values())}


class Monitor:
    """Checks in a thread until stopped; ``observations`` holds the results."""

    def __init__(self, snapshot: Callable[[], invariants.Snapshot], *, recheck_delay: float,
                 interval: float = 0.0,
                 restarts: Callable[[], tuple[Mapping[str, int], set[str]]] | None = None,
                 ) -> None:
        self._snapshot = snapshot
        self._recheck = recheck_delay
        self._interval = interval
        # () -> (host -> kills and starts so far, hosts down now), when hosts
        # are killed: a finding about an instance whose host was being
        # restarted while it was seen is left to the restart (and is found
        # again if the restart does not settle it); every other finding of
        # every kind counts.
        self._restarts = restarts
        self.observations = Observations()
        # kind -> findings about a host being restarted (not counted)
        self.transient: collections.Counter = collections.Counter()
        self._stop = threading.Event()
        self._started = time.monotonic()
        self._previous: dict[str, tuple] = {}  # trusted observations
        self._pending: dict[str, tuple] = {}  # the last snapshot's, not yet trusted
        self._thread = threading.Thread(target=self._loop, name="invariant-checker",
                                        daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.check_once()
            except Exception as exc:  # a failed read is not a finding
                self.observations.errors += 1
                LOG.warning("invariant check failed: %s", exc)
            self._stop.wait(self._interval)

    def _take(self) -> invariants.Snapshot:
        snap = self._snapshot()
        obs = self.observations
        obs.samples.append((time.monotonic() - self._started, vcpu_by_host(snap)))
        obs.timeline.append((snap.taken_at, host_samples(snap)))
        now = _resting(snap)
        # An observation counts once the next snapshot, whose records are
        # read after this one's allocations, shows the same record: no
        # operation on the instance began while its allocations were read.
        trusted = {uuid: seen for uuid, seen in self._pending.items()
                   if uuid in now and now[uuid][0] == seen[0]}
        for uuid, (record, providers) in trusted.items():
            before = self._previous.get(uuid)
            if before is not None and before[0] == record and before[1] != providers:
                obs.flips[uuid] += 1
        self._previous = trusted
        self._pending = now
        return snap

    def check_once(self) -> list[invariants.Violation]:
        """One confirmed check; returns the violations it counted."""
        before = self._restarts() if self._restarts else ({}, set())
        first = invariants.check_snapshot(self._take())
        self.observations.passes += 1
        if not first:
            return []
        time.sleep(self._recheck)
        snap = self._take()
        second = set(invariants.check_snapshot(snap))
        after = self._restarts() if self._restarts else ({}, set())
        restarting = before[1] | after[1] | {
            h for h, n in after[0].items() if before[0].get(h) != n}
        confirmed = [f for f in first if f in second]
        counted = []
        for finding in confirmed:
            if not (restarting and _hosts_of(snap, finding) & restarting):
                counted.append(finding)
                self.observations.violations[finding] = \
                    self.observations.violations.get(finding, 0) + 1
                for host in _hosts_of(snap, finding) | _provider_host(snap, finding) or {""}:
                    self.observations.violation_marks.append((snap.taken_at, host, finding.kind))
                LOG.error("invariant violated: %s", finding)
            else:
                self.transient[finding.kind] += 1
        return counted


def _provider_host(snap: invariants.Snapshot, finding: invariants.Violation) -> set[str]:
    root = snap.root_of.get(finding.provider_uuid or "", finding.provider_uuid)
    return {host for (host, _node), r in snap.node_roots.items() if r == root}


def _hosts_of(snap: invariants.Snapshot, finding: invariants.Violation) -> set[str]:
    """The hosts whose restart settles what ``finding`` is about: its
    instance's host and both ends of the instance's unfinished moves."""
    consumer = finding.consumer_uuid
    if consumer is None:
        return set()  # a provider's finding: nobody's restart excuses it
    migration = snap.migrations.get(consumer)
    instance_uuid = migration.instance_uuid if migration is not None else consumer
    instance = snap.instances.get(instance_uuid)
    hosts = {instance.host} if instance is not None and instance.host else set()
    for m in snap.migrations.values():
        if m.instance_uuid == instance_uuid and not m.finished:
            hosts |= {h for h in (m.source_host, m.dest_host) if h}
    return hosts
