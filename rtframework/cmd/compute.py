"""``rtf compute run|update`` (a host's agent) and ``rtf compute-nodes list``."""

from __future__ import annotations

import _thread
import logging
import signal
import threading
import time

from cliff.command import Command
from cliff.lister import Lister

from rtframework import instance_recovery
from rtframework.cmd import agent_lock
from rtframework.cmd.columns import Lines
from rtframework.driver import load_driver
from rtframework.moves import context, recovery
from rtframework.tracker import ResourceTracker, agent

LOG = logging.getLogger(__name__)


def tracker_for(app, host: str | None = None) -> ResourceTracker:
    """A tracker of ``host`` (default: [DEFAULT] host) with the configured driver."""
    conf = app.conf
    host = host or conf.host
    driver = load_driver(conf, host)
    driver.init_host()
    return ResourceTracker(conf, host, driver, app.backend, app.compute)


def recover(app, tracker: ResourceTracker) -> instance_recovery.HostRecovery:
    """Finish or undo what a stop of this host interrupted: moves, boots,
    shelves, unshelves; then destroy the guests placed elsewhere."""
    ctx = context.MoveContext(app.conf, app.backend, app.compute, {tracker.host: tracker.driver})
    done = instance_recovery.recover_host(tracker, ctx)
    for move in done.moves:
        LOG.warning("host %s: %s %s of instance %s was %s: %s", tracker.host,
                    move.migration_type, move.migration_uuid, move.instance_uuid,
                    move.old_status, move.action)
    return done


def _add_host(parser):
    parser.add_argument("--host", help="Act as this compute host (default: [DEFAULT] host).")
    return parser


_REPORT_COLUMNS = ("Node", "UUID", "Created", "Updated", "Removed", "Kept", "Healed",
                   "Findings", "Errors")


def _report_rows(reports):
    return [(r.nodename, r.uuid, Lines(r.created, ", "), Lines(r.updated, ", "),
             Lines(r.removed, ", "), Lines(r.kept, ", "), Lines(r.healed, ", "),
             Lines(r.findings), Lines(r.errors)) for r in reports]


def run_pass(tracker: ResourceTracker) -> tuple[list, str]:
    """One periodic pass, and the one line that sums it up: nodes, placement
    reads and writes, instances healed, findings, errors and duration."""
    reads, writes = tracker.stats.reads, tracker.stats.writes
    started = time.monotonic()
    reports = tracker.update_available_resource()
    took = time.monotonic() - started
    line = (f"host {tracker.host} pass: {len(reports)} nodes, "
            f"{tracker.stats.reads - reads} reads, {tracker.stats.writes - writes} writes, "
            f"{sum(len(r.healed) for r in reports)} healed, "
            f"{sum(len(r.findings) for r in reports)} findings, "
            f"{sum(len(r.errors) for r in reports)} errors, {took * 1000:.0f} ms")
    return reports, line


def agent_pass(app, tracker: ResourceTracker) -> None:
    """One pass of a running agent: the evacuations of this host it may
    close now that it is back (unless forced down), then the update."""
    forced_down = any(s.forced_down for s in app.compute.list_services()
                      if s.host == tracker.host)
    if not forced_down:
        ctx = context.MoveContext(app.conf, app.backend, app.compute,
                                  {tracker.host: tracker.driver})
        recovery.finish_evacuations(ctx, tracker.host)
    LOG.info("%s", run_pass(tracker)[1])


class ComputeUpdate(Lister):
    """Run one periodic resource update of a host and show what it did."""

    def get_parser(self, prog_name):
        return _add_host(super().get_parser(prog_name))

    def take_action(self, parsed_args):
        tracker = tracker_for(self.app, parsed_args.host)
        reports, line = run_pass(tracker)
        # The same line an agent logs per pass; on stderr, so that stdout
        # stays the table (or json) alone.
        self.app.stderr.write(line + "\n")
        # A node whose provider update failed is a failed step: exit 1.
        self.failed = any(r.errors for r in reports)
        return _REPORT_COLUMNS, _report_rows(reports)


class ComputeRun(Command):
    """Run a host's agent: periodic resource updates until SIGTERM or SIGINT.

    One update every update_resources_interval seconds, a heartbeat of its
    own every service_down_time / 3 seconds (however long a pass takes);
    the moves this host was part of when it stopped are finished
    or undone first.
    """

    def get_parser(self, prog_name):
        parser = _add_host(super().get_parser(prog_name))
        parser.add_argument("--once", action="store_true", help="One update, then exit.")
        return parser

    def take_action(self, parsed_args):
        self.lock = agent_lock.acquire(self.app.conf, parsed_args.host or self.app.conf.host)
        tracker = tracker_for(self.app, parsed_args.host)
        # What this host was doing when it stopped (moves, boots, shelves,
        # unshelves) is finished or undone first, so that the periodic runs
        # start from records that say what each instance holds.
        recover(self.app, tracker)
        if parsed_args.once:
            reports, line = run_pass(tracker)
            LOG.info("%s", line)
            return 1 if any(r.errors for r in reports) else 0
        stop = threading.Event()
        for signum in (signal.SIGTERM, signal.SIGINT):
            # Set from another thread, started with the low-level API (no
            # lock of threading's own): the handler runs in the main thread,
            # which may hold the event's lock at that very moment.
            signal.signal(signum, lambda *_: _thread.start_new_thread(stop.set, ()))
        agent.run(self.app.conf, tracker, lambda: agent_pass(self.app, tracker), stop)
        tracker.driver.cleanup_host()
        LOG.warning("compute agent of host %s stopped", tracker.host)
        return 0


class ComputeReconcile(Lister):
    """Settle what a stop of a host interrupted, as `compute run` does first.

    Moves with a migration record are finished or undone, killed boots end
    ERROR, shelves and unshelves are finished or undone, guests the records
    place elsewhere are destroyed; lists what was done."""

    def get_parser(self, prog_name):
        return _add_host(super().get_parser(prog_name))

    def take_action(self, parsed_args):
        tracker = tracker_for(self.app, parsed_args.host)
        done = recover(self.app, tracker)
        rows = [(m.instance_uuid, f"{m.migration_type} {m.migration_uuid}", m.old_status,
                 m.new_status, m.action) for m in done.moves]
        rows += [(r.instance_uuid, "instance", r.before, r.after, r.action)
                 for r in done.instances + done.strays]
        if not rows:
            self.app.stdout.write(f"host {tracker.host}: nothing to reconcile\n")
        return ("Instance", "Record", "Was", "Now", "Action"), rows


class ComputeNodesList(Lister):
    """List the compute nodes hosts have reported."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("--host", help="Only this host's nodes.")
        return parser

    def take_action(self, parsed_args):
        nodes = self.app.compute.list_compute_nodes(host=parsed_args.host)
        services = {s.host: s for s in self.app.compute.list_services()}
        down_after = self.app.conf.service_down_time
        rows = []
        for node in nodes:
            up = self.app.compute.is_host_up(node.host, down_after) if node.host in services \
                else False
            rows.append((node.uuid, node.host, node.nodename, node.driver,
                         node.updated_at.isoformat(timespec="seconds"), "up" if up else "down"))
        return ("UUID", "Host", "Node", "Driver", "Updated", "State"), rows
