"""The chaos soak on a 3-node Galera cluster, one node killed and restarted mid-run.

``python -m benchmarks.galera_soak`` starts a cluster
(``tests/fixtures/galera.py``; or uses the one running under
``$RTF_TEST_GALERA_DIR``), creates a database and runs the process soak of
``rtf simulate --processes --chaos --spread-hosts`` over it: host ``i``
writes through node ``i % 3`` and fails over to the next. While it runs,
node ``--node`` is SIGKILLed once a third of the operations are done,
started again a sixth later, and has rejoined (``wsrep_ready``, cluster
size 3) before the last sixth begins (the soak waits for it there if
needed). Afterwards every node must hold the same rows in every table.

A node leaving (its death noticed after ``evs.suspect_timeout``, 5 s) or
joining freezes every commit and causal read of the cluster for seconds;
an operation caught half-way stays half-way that long. The checker only
counts a finding it sees again ``recheck_delay`` later, so on Galera that
delay must be longer than the longest freeze: :data:`RECHECK_DELAY`.

Printed: the soak's tables, then the outage: the operations done before
the kill, while the node was down (killed, then joining), and after it
rejoined; the seconds it took to rejoin; whether the nodes agree.
"""

from __future__ import annotations

import argparse
import bisect
import contextlib
import logging
import os
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field

import prettytable

from rtframework import db
from rtframework.compute import models as compute_models
from rtframework.compute.store import ComputeStore
from rtframework.placement.sql import models as placement_models
from rtframework.simulate import ops, report, runner
from tests.fixtures import galera

# Longer than the freeze after a node's death (evs.suspect_timeout 5 s,
# measured 6.1-6.6 s here under load) and than a join's (up to 2.2 s).
RECHECK_DELAY = 8.0


@dataclass
class Outage:
    """When node ``node`` went down and came back, in operations done."""

    node: int
    kill_after: int  # operations done when it is killed
    restart_after: int  # ... when it is started again
    rejoin_by: int  # ... by when it must have rejoined (the soak waits)
    done_at: list[float] = field(default_factory=list)  # monotonic time of each op
    killed_at: float | None = None
    restarted_at: float | None = None
    rejoined_at: float | None = None
    waited: float = 0.0  # seconds the soak waited for the rejoin
    failure: str | None = None

    def between(self, start: float | None, end: float | None) -> int:
        """Operations finished in [start, end) (None: the run's start or end)."""
        lo = 0 if start is None else bisect.bisect_left(self.done_at, start)
        hi = len(self.done_at) if end is None else bisect.bisect_left(self.done_at, end)
        return max(0, hi - lo)

    @property
    def before(self) -> int:
        return self.between(None, self.killed_at) if self.killed_at else len(self.done_at)

    @property
    def while_down(self) -> int:
        """Killed, or started and not serving yet."""
        return self.between(self.killed_at, self.rejoined_at) if self.killed_at else 0

    @property
    def after(self) -> int:
        return self.between(self.rejoined_at, None) if self.rejoined_at else 0

    @property
    def rejoin_seconds(self) -> float | None:
        if self.restarted_at is None or self.rejoined_at is None:
            return None
        return self.rejoined_at - self.restarted_at


class NodeKiller:
    """The soak's progress hook: kills the node while the next operation
    runs, restarts it in the background (a rejoin takes tens of seconds)
    and waits for the rejoin before the last operations."""

    KILL_DELAY = 0.02  # seconds into the next operation

    def __init__(self, cluster: galera.GaleraCluster, outage: Outage) -> None:
        self.cluster = cluster
        self.outage = outage
        self._killer: threading.Thread | None = None
        self._restarter: threading.Thread | None = None

    def __call__(self, op: ops.Op, outcome: str) -> None:
        out = self.outage
        out.done_at.append(time.monotonic())
        done = len(out.done_at)
        if done == out.kill_after:
            self._killer = threading.Thread(target=self._kill, name="galera-kill")
            self._killer.start()
        elif done == out.restart_after:
            self._killer.join()
            self._restarter = threading.Thread(target=self._restart, name="galera-restart")
            self._restarter.start()
        elif done == out.rejoin_by:
            self.join()

    def _kill(self) -> None:
        time.sleep(self.KILL_DELAY)
        self.cluster.kill(self.outage.node)
        self.outage.killed_at = time.monotonic()

    def _restart(self) -> None:
        self.outage.restarted_at = time.monotonic()
        try:
            self.cluster.restart(self.outage.node)
            self.outage.rejoined_at = time.monotonic()
        except Exception as exc:  # reported, and the run fails
            self.outage.failure = f"node{self.outage.node} did not rejoin: {exc}"

    def join(self) -> None:
        """Wait for the kill and the rejoin (the soak pauses meanwhile)."""
        began = time.monotonic()
        for thread in (self._killer, self._restarter):
            if thread is not None:
                thread.join()
        self.outage.waited += time.monotonic() - began


class FreezeProbe:
    """A commit and a causal read through every node, every 0.1 s, in a
    database of its own: when and for how long each node could not commit
    (a node leaving or joining freezes the whole cluster for a while)."""

    SLOW = 0.25  # seconds; a beat slower than this is a freeze

    def __init__(self, cluster: galera.GaleraCluster) -> None:
        self.cluster = cluster
        self.database = f"rtf_probe_{uuid.uuid4().hex[:8]}"
        self.freezes: list[tuple[int, float, float]] = []  # (node, start, seconds)
        self.commits = [0] * len(cluster.nodes)
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        self.cluster.create_database(self.database)
        with self._connect(0) as conn:
            conn.cursor().execute("CREATE TABLE beat (node INT PRIMARY KEY, n INT)")
        self._threads = [threading.Thread(target=self._beat, args=(i,), daemon=True)
                         for i in range(len(self.cluster.nodes))]
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join()
        self.cluster.drop_database(self.database)

    @contextlib.contextmanager
    def _connect(self, index: int):
        import pymysql

        conn = pymysql.connect(host="127.0.0.1", port=self.cluster.nodes[index].port,
                               user="root", database=self.database, autocommit=True,
                               connect_timeout=2)
        try:
            yield conn
        finally:
            conn.close()

    def _beat(self, index: int) -> None:
        while not self._stop.is_set():
            began = time.monotonic()
            try:
                with self._connect(index) as conn, conn.cursor() as cur:
                    cur.execute("SET SESSION wsrep_sync_wait = 1")
                    while not self._stop.wait(0.1):
                        began = time.monotonic()
                        cur.execute("INSERT INTO beat VALUES (%s, 1) "
                                    "ON DUPLICATE KEY UPDATE n = n + 1", (index,))
                        self.commits[index] += 1
                        cur.execute("SELECT n FROM beat WHERE node = %s", (index,))
                        cur.fetchall()
                        if time.monotonic() - began > self.SLOW:
                            self.freezes.append((index, began, time.monotonic() - began))
            except Exception:  # the node is down or not ready: not a freeze
                self._stop.wait(0.2)

    def longest(self, index: int, start: float, end: float) -> float:
        return max((s for i, b, s in self.freezes if i == index and start <= b < end),
                   default=0.0)


def schedule(operations: int, node: int) -> Outage:
    """Kill after a third, restart a sixth later, rejoined a sixth before the end."""
    if operations < 6:
        raise ValueError("the node outage needs at least 6 operations")
    sixth = operations // 6
    return Outage(node=node, kill_after=2 * sixth, restart_after=3 * sixth,
                  rejoin_by=operations - sixth)


def node_contents(cluster: galera.GaleraCluster, database: str) -> list[dict[str, list]]:
    """Every row of every table, as each node sees it (causal reads)."""
    tables = [*placement_models.metadata.sorted_tables, *compute_models.metadata.sorted_tables]
    seen = []
    for index in range(len(cluster.nodes)):
        engine = db.create_engine(cluster.url(index, database), pool_size=1, max_overflow=0)
        try:
            with engine.connect() as conn:
                seen.append({table.name: [tuple(row) for row in conn.execute(
                    table.select().order_by(*table.primary_key.columns))]
                    for table in tables})
        finally:
            engine.dispose()
    return seen


@dataclass
class SoakOutcome:
    result: runner.Result
    outage: Outage
    nodes_agree: bool
    node_states: list[str]  # wsrep_local_state_comment of each node at the end
    cluster_sizes: list[int]
    # Transactions each node committed for its own clients during the run
    # (None for the restarted node: its counter starts again at 0).
    local_commits: list[int | None]
    probe: FreezeProbe | None = None
    # With violations: the recorded history of the instances involved.
    history: str = ""


def soak_with_outage(cluster: galera.GaleraCluster, database: str,
                     options: runner.Options, node: int = 0) -> SoakOutcome:
    """Run the soak over ``database`` (created, synced by the soak) with
    ``node`` killed and restarted mid-run."""
    outage = schedule(options.operations, node)
    killer = NodeKiller(cluster, outage)
    url = cluster.failover_url(database)
    opts = runner.Options(**{**options.__dict__, "database_url": url, "processes": True,
                             "chaos": True, "spread_hosts": True})
    commits = [_commits(n) for n in cluster.nodes]
    probe = FreezeProbe(cluster)
    probe.start()
    try:
        result = runner.Soak(opts).run(killer)
    finally:
        killer.join()
        probe.stop()
    contents = node_contents(cluster, database)
    history = _history(url, result, outage, probe) if result.violations else ""
    return SoakOutcome(
        result=result, outage=outage, probe=probe, history=history,
        nodes_agree=all(c == contents[0] for c in contents),
        node_states=[n.status("wsrep_local_state_comment") or "down" for n in cluster.nodes],
        cluster_sizes=[int(n.status("wsrep_cluster_size") or 0) for n in cluster.nodes],
        local_commits=[None if i == node else _commits(n) - commits[i] - probe.commits[i]
                       for i, n in enumerate(cluster.nodes)])


def _history(url: str, result: runner.Result, outage: Outage, probe: FreezeProbe) -> str:
    """Allocation changes and migrations of every instance a violation
    names, times in seconds from the node's kill."""
    store = ComputeStore(db.create_engine(url, pool_size=1, max_overflow=0))
    offset = time.time() - time.monotonic()
    killed = (outage.killed_at or 0.0) + offset
    rejoined = (outage.rejoined_at or 0.0) - (outage.killed_at or 0.0)
    lines = [f"times from the kill of node{outage.node}; restarted at "
             f"{(outage.restarted_at or 0.0) - (outage.killed_at or 0.0):.2f}, "
             f"rejoined at {rejoined:.2f}"]
    for index, began, seconds in probe.freezes:
        lines.append(f"{began - (outage.killed_at or 0.0):8.2f} node{index} froze {seconds:.2f} s")
    try:
        for when, host, kind in result.observations.violation_marks:
            lines.append(f"{when - (outage.killed_at or 0.0):8.2f} {kind} seen ({host})")
        consumers = set()
        for finding in result.violations:
            consumers.add(finding.consumer_uuid)
            for m in store.list_migrations():
                if finding.consumer_uuid in (m.uuid, m.instance_uuid):
                    consumers |= {m.uuid, m.instance_uuid}
                    lines.append(f"migration {m.uuid} of {m.instance_uuid}: {m.migration_type} "
                                 f"{m.source_host} -> {m.dest_host} {m.status}")
        changes = [c for c in store.list_allocation_history() if c.consumer_uuid in consumers]
        for c in changes:
            lines.append(f"{c.created_at.timestamp() - killed:8.2f} {c.who} "
                         f"{c.consumer_uuid[:8]} on {c.provider_uuid[:8]}: "
                         f"{c.before} -> {c.after} ({c.why})")
    finally:
        store.close()
    return "\n".join(lines)


def _commits(node: galera.Node) -> int:
    return int(node.status("wsrep_local_commits") or 0)


def outage_table(outcome: SoakOutcome) -> str:
    out = outcome.outage
    table = prettytable.PrettyTable(["Node outage", "Value"], align="l")
    seconds = out.rejoin_seconds
    for row in (
            ("node killed (SIGKILL) and restarted", f"node{out.node}"),
            ("operations before the kill", out.before),
            ("operations while the node was down (killed, then joining)", out.while_down),
            ("operations after it rejoined", out.after),
            ("seconds from restart to rejoined",
             "did not rejoin" if seconds is None else f"{seconds:.1f}"),
            ("seconds the soak waited for the rejoin", f"{out.waited:.1f}"),
            *_freeze_rows(outcome),
            ("node states at the end", ", ".join(outcome.node_states)),
            ("cluster size seen by each node", ", ".join(map(str, outcome.cluster_sizes))),
            ("transactions committed through each node",
             ", ".join("restarted" if n is None else str(n) for n in outcome.local_commits)),
            ("every node holds the same rows", outcome.nodes_agree)):
        table.add_row(row)
    if out.failure:
        table.add_row(("failure", out.failure))
    return table.get_string()


def _freeze_rows(outcome: SoakOutcome) -> list[tuple[str, str]]:
    out, probe = outcome.outage, outcome.probe
    if probe is None or out.killed_at is None:
        return []
    others = [i for i in range(len(probe.cluster.nodes)) if i != out.node]
    restarted = out.restarted_at or out.killed_at
    rejoined = out.rejoined_at or float("inf")

    def longest(start: float, end: float) -> str:
        return ", ".join(f"node{i} {probe.longest(i, start, end):.1f}" for i in others)

    return [("longest commit freeze after the kill (s)", longest(out.killed_at, restarted)),
            ("longest commit freeze while it rejoined (s)", longest(restarted, rejoined))]


def passed(outcome: SoakOutcome) -> bool:
    result, out = outcome.result, outcome.outage
    return (not result.violations and not result.errors and out.failure is None
            and out.before > 0 and out.while_down > 0 and out.after > 0
            and outcome.nodes_agree and outcome.cluster_sizes == [3, 3, 3]
            and outcome.node_states == ["Synced"] * 3)


@contextlib.contextmanager
def _cluster() -> Iterator[galera.GaleraCluster]:
    base_dir = os.environ.get("RTF_TEST_GALERA_DIR")
    if base_dir and os.path.exists(os.path.join(base_dir, "node0", "mysqld.sock")):
        yield galera.GaleraCluster(base_dir)
        return
    with galera.running_cluster() as cluster:
        yield cluster


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.galera_soak",
                                     description=__doc__.split("\n\n")[0])
    defaults = runner.Options()
    parser.add_argument("--hosts", type=int, default=6)
    parser.add_argument("--operations", type=int, default=300)
    parser.add_argument("--seed", type=int)
    parser.add_argument("--node", type=int, choices=range(galera.NODES), default=0,
                        help="the node killed and restarted (default 0: the first node "
                        "of the soak's own URL and of hosts 0, 3, ...)")
    parser.add_argument("--kill-rate", type=float, default=defaults.kill_rate)
    parser.add_argument("--periodic-pause", type=float, default=defaults.periodic_pause)
    parser.add_argument("--recheck-delay", type=float, default=RECHECK_DELAY,
                        help="seconds before the checker confirms a finding (default "
                        "%(default)s: longer than the cluster's freeze when a node leaves)")
    args = parser.parse_args(argv)
    reason = galera.missing()
    if reason:
        print(reason, file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.ERROR)
    options = runner.Options(hosts=args.hosts, operations=args.operations, seed=args.seed,
                             kill_rate=args.kill_rate, periodic_pause=args.periodic_pause,
                             recheck_delay=args.recheck_delay, progress=False)
    began = time.monotonic()
    with _cluster() as cluster:
        database = f"rtf_soak_{uuid.uuid4().hex[:12]}"
        cluster.create_database(database)
        try:
            outcome = soak_with_outage(cluster, database, options, args.node)
        finally:
            cluster.drop_database(database)
    result = outcome.result
    print(report.operations_table(result))
    print(report.summary_table(result))
    if result.observations.flips:
        print(report.flips_table(result))
    if result.violations:
        print(report.violations_table(result))
    print(outage_table(outcome))
    if outcome.history:
        print(outcome.history)
    print(f"total {time.monotonic() - began:.0f} s (cluster start included), "
          f"load average at the end {os.getloadavg()[0]:.1f}")
    return 0 if passed(outcome) else 1


if __name__ == "__main__":
    sys.exit(main())
