"""``rtf check``, ``rtf audit``, ``rtf heal`` and ``rtf allocations history``.

check, audit and heal exit with status 1 when they found something (heal:
something it could not fix), so they can gate scripts and CI.
"""

from __future__ import annotations

import json

from cliff.lister import Lister

from rtframework import audit, invariants
from rtframework.cmd import names

_FINDING_COLUMNS = ("Kind", "Consumer", "Consumer name", "Provider", "Provider name", "Detail")
_ACTION_COLUMNS = ("Consumer", "Consumer name", "Allocations", "Done", "Detail")


def _add_recheck(parser):
    parser.add_argument(
        "--recheck-delay", type=float, default=0.5, metavar="SECONDS",
        help="Re-read everything after this many seconds and report only what "
        "is still wrong, so an operation in flight is not reported (default 0.5; "
        "a negative value reports a single pass).")
    return parser


def _finding_rows(findings, label: names.Names):
    return [(f.kind, f.consumer_uuid or "", label.consumer(f.consumer_uuid),
             f.provider_uuid or "", label.provider(f.provider_uuid), f.detail)
            for f in findings]


def _action_rows(actions, label: names.Names):
    return [(a.consumer_uuid, label.consumer(a.consumer_uuid),
             json.dumps(a.allocations, sort_keys=True), a.done, a.detail)
            for a in actions]


class _ExitOnFindings(Lister):
    """A Lister whose exit status is 1 when ``self.failed`` is set."""

    failed = False

    def _names(self) -> names.Names:
        return names.Names(self.app.backend, self.app.compute)

    def run(self, parsed_args):
        status = super().run(parsed_args)
        return 1 if self.failed else status


class Check(_ExitOnFindings):
    """Check every accounting invariant; list the violations."""

    def get_parser(self, prog_name):
        return _add_recheck(super().get_parser(prog_name))

    def take_action(self, parsed_args):
        found = invariants.check(self.app.backend, self.app.compute,
                                 recheck_delay=parsed_args.recheck_delay)
        self.failed = bool(found)
        return _FINDING_COLUMNS, _finding_rows(found, self._names())


class Audit(_ExitOnFindings):
    """List orphans, missing and multi-host allocations; --delete removes orphans.

    Only instances that are not moving are judged; a move holds two hosts
    on purpose.
    """

    def get_parser(self, prog_name):
        parser = _add_recheck(super().get_parser(prog_name))
        parser.add_argument(
            "--delete", action="store_true",
            help="Remove the allocations of orphans (consumers that are neither an "
            "instance nor an unfinished migration), each guarded by its consumer "
            "generation; lists what was removed.")
        parser.add_argument("--who", default="audit",
                            help="Name recorded in the allocation history (default audit).")
        return parser

    def take_action(self, parsed_args):
        backend, store = self.app.backend, self.app.compute
        found = audit.audit(backend, store, recheck_delay=parsed_args.recheck_delay)
        if not parsed_args.delete:
            self.failed = bool(found)
            return _FINDING_COLUMNS, _finding_rows(found, self._names())
        actions = audit.delete_orphans(backend, store, found, who=parsed_args.who,
                                       retries=self.app.conf.placement.conflict_retries)
        self.failed = any(f.kind not in audit.ORPHAN_KINDS for f in found
                          if not f.kind.startswith(audit.HOST_FINDING_PREFIX))
        return _ACTION_COLUMNS, _action_rows(actions, self._names())


class Heal(_ExitOnFindings):
    """Claim the flavor of every ACTIVE instance that holds nothing on its node."""

    def get_parser(self, prog_name):
        parser = _add_recheck(super().get_parser(prog_name))
        parser.add_argument("--dry-run", action="store_true",
                            help="Print what would be claimed and change nothing.")
        parser.add_argument("--who", default="heal",
                            help="Name recorded in the allocation history (default heal).")
        return parser

    def take_action(self, parsed_args):
        actions = audit.heal(self.app.backend, self.app.compute, dry_run=parsed_args.dry_run,
                             who=parsed_args.who, recheck_delay=parsed_args.recheck_delay)
        self.failed = any(not a.done and not a.detail.startswith("would claim")
                          for a in actions)
        return _ACTION_COLUMNS, _action_rows(actions, self._names())


class AllocationsHistory(Lister):
    """Every recorded allocation change of a consumer, oldest first."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("consumer", help="Consumer uuid, or an instance name.")
        return parser

    def take_action(self, parsed_args):
        store = self.app.compute
        rows = store.list_allocation_history(
            consumer_uuid=names.consumer_uuid(store, parsed_args.consumer))
        label = names.Names(self.app.backend, store)
        return ("When", "Consumer", "Consumer name", "Provider", "Provider name", "Before",
                "After", "Who", "Why"), [
            (r.created_at.isoformat(timespec="milliseconds"), r.consumer_uuid,
             label.consumer(r.consumer_uuid), r.provider_uuid, label.provider(r.provider_uuid),
             json.dumps(dict(r.before), sort_keys=True), json.dumps(dict(r.after), sort_keys=True),
             r.who, r.why)
            for r in rows]
