"""``rtf check``, ``rtf audit``, ``rtf heal`` and ``rtf allocations history``.

check, audit and heal (also with --dry-run or --delete) exit with status
1 exactly when they found something, so they can gate scripts and CI, and
say "no findings" in one line when there was nothing. Every finding names
the command that repairs it (the Fix column).
"""

from __future__ import annotations

import json

from cliff.lister import Lister

from rtframework import audit, invariants
from rtframework.cmd import names

_FINDING_COLUMNS = ("Kind", "Consumer", "Consumer name", "Provider", "Provider name", "Detail",
                    "Fix")
_ACTION_COLUMNS = ("Consumer", "Consumer name", "Allocations", "Done", "Detail")
_UNJUDGED_SHOWN = 10


def _add_recheck(parser):
    parser.add_argument(
        "--recheck-delay", type=float, default=0.5, metavar="SECONDS",
        help="Re-read everything after this many seconds and report only what "
        "is still wrong, so an operation in flight is not reported (default 0.5; "
        "a negative value reports a single pass).")
    return parser


def _add_stale_after(parser):
    parser.add_argument(
        "--stale-after", type=float, default=invariants.STALE_AFTER, metavar="SECONDS",
        help="Report a boot, task or move start whose record has not changed for this "
        f"many seconds as interrupted (default {invariants.STALE_AFTER:g}: far longer "
        "than any such step takes while its process runs).")
    return parser


def _fixes(findings, store) -> list[str]:
    """The repairing command of each finding; a host's own finding about a
    consumer takes the fix of the checker's finding about it."""
    main = {f.consumer_uuid: audit.fix_for(f, store) for f in findings
            if not f.kind.startswith(audit.HOST_FINDING_PREFIX)}
    return [main.get(f.consumer_uuid) or audit.fix_for(f, store) for f in findings]


def _finding_rows(findings, label: names.Names, store):
    return [(f.kind, f.consumer_uuid or "", label.consumer(f.consumer_uuid),
             f.provider_uuid or "", label.provider(f.provider_uuid), f.detail, fix)
            for f, fix in zip(findings, _fixes(findings, store), strict=True)]


def _action_rows(actions, label: names.Names):
    return [(a.consumer_uuid, label.consumer(a.consumer_uuid),
             json.dumps(a.allocations, sort_keys=True), a.done, a.detail)
            for a in actions]


class _ExitOnFindings(Lister):
    """A Lister whose exit status is 1 when ``self.failed`` is set, and
    that says "no findings" (in table form) when it lists nothing."""

    failed = False

    def produce_output(self, parsed_args, column_names, data):
        data = list(data)
        if not data and getattr(parsed_args, "formatter", "table") == "table":
            self.app.stdout.write("no findings\n")
            return 0
        return super().produce_output(parsed_args, column_names, data)

    def _names(self) -> names.Names:
        return names.Names(self.app.backend, self.app.compute)

    def run(self, parsed_args):
        status = super().run(parsed_args)
        return 1 if self.failed else status

    def _say_unjudged(self, unjudged: set[str], label: names.Names) -> None:
        """On stderr, so that the listed findings stay machine-readable;
        the first ten by uuid."""
        if not unjudged:
            return
        shown = sorted(unjudged)[:_UNJUDGED_SHOWN]
        named = [f"{u} ({name})" if (name := label.consumer(u)) else u for u in shown]
        more = len(unjudged) - len(shown)
        self.app.stderr.write(
            f"note: {len(unjudged)} instance(s) changed (or were created) while they were "
            "read and were not judged; check again to judge them: " + ", ".join(named)
            + (f" and {more} more" if more else "") + "\n")


class Check(_ExitOnFindings):
    """Check every accounting invariant; list the violations."""

    def get_parser(self, prog_name):
        return _add_stale_after(_add_recheck(super().get_parser(prog_name)))

    def take_action(self, parsed_args):
        unjudged: set[str] = set()
        found = invariants.check(self.app.backend, self.app.compute,
                                 recheck_delay=parsed_args.recheck_delay,
                                 stale_after=parsed_args.stale_after, unjudged=unjudged)
        label = self._names()
        self._say_unjudged(unjudged, label)
        self.failed = bool(found)
        return _FINDING_COLUMNS, _finding_rows(found, label, self.app.compute)


class Audit(_ExitOnFindings):
    """List orphans, leaks, wrong allocations; --delete removes the leaks.

    Only instances that are not moving are judged for wrong allocations (a
    move holds two hosts on purpose); interrupted operations are listed too.
    """

    def get_parser(self, prog_name):
        parser = _add_stale_after(_add_recheck(super().get_parser(prog_name)))
        parser.add_argument(
            "--delete", action="store_true",
            help="Remove the allocations of consumers that may hold nothing (neither an "
            "instance nor an unfinished migration, a finished migration, a deleted or "
            "an idle shelved instance), each guarded by its consumer generation and "
            "recorded in the allocation history; lists what was removed and what is "
            "left with its fix.")
        parser.add_argument("--who", default="audit",
                            help="Name recorded in the allocation history (default audit).")
        return parser

    def take_action(self, parsed_args):
        backend, store = self.app.backend, self.app.compute
        unjudged: set[str] = set()
        found = audit.audit(backend, store, recheck_delay=parsed_args.recheck_delay,
                            stale_after=parsed_args.stale_after, unjudged=unjudged)
        label = self._names()
        self._say_unjudged(unjudged, label)
        self.failed = bool(found)
        if not parsed_args.delete:
            return _FINDING_COLUMNS, _finding_rows(found, label, store)
        actions = audit.delete_orphans(backend, store, found, who=parsed_args.who,
                                       retries=self.app.conf.placement.conflict_retries)
        removed = {a.consumer_uuid for a in actions}
        # What --delete does not repair stays listed, with its fix.
        rest = [(f.consumer_uuid or "", label.consumer(f.consumer_uuid), "{}", False,
                 f"{f}; fix: {fix}")
                for f, fix in zip(found, _fixes(found, store), strict=True)
                if f.consumer_uuid not in removed]
        return _ACTION_COLUMNS, _action_rows(actions, label) + rest


class Heal(_ExitOnFindings):
    """Make every idle live instance hold exactly its flavor on its own node."""

    def get_parser(self, prog_name):
        parser = _add_recheck(super().get_parser(prog_name))
        parser.add_argument("--dry-run", action="store_true",
                            help="Print what would be claimed and change nothing.")
        parser.add_argument("--who", default="heal",
                            help="Name recorded in the allocation history (default heal).")
        return parser

    def take_action(self, parsed_args):
        unjudged: set[str] = set()
        actions = audit.heal(self.app.backend, self.app.compute, dry_run=parsed_args.dry_run,
                             who=parsed_args.who, recheck_delay=parsed_args.recheck_delay,
                             retries=self.app.conf.placement.conflict_retries,
                             unjudged=unjudged)
        label = self._names()
        self._say_unjudged(unjudged, label)
        self.failed = bool(actions)
        return _ACTION_COLUMNS, _action_rows(actions, label)


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
