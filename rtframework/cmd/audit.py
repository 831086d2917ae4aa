"""``rtf check``, ``rtf audit``, ``rtf heal`` and ``rtf allocations history``.

Their exit statuses (:mod:`rtframework.cmd.status`) are nova-manage's:
check and audit exit 3 when they list findings, ``audit --delete`` 4
when it removed allocations, heal 0 when it healed, 4 when there was
nothing to heal, 1 when ``--max-count`` left instances to heal and 3 when
one could not be healed; so they can gate scripts and CI. They say "no
findings" in one line when there was nothing. Every finding names the
command that repairs it (the Fix column).
"""

from __future__ import annotations

from cliff.lister import Lister

from rtframework import audit, invariants
from rtframework.cmd import arguments, names, status
from rtframework.cmd.columns import Amounts, Nested, optional

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
    return [(f.kind, optional(f.consumer_uuid), optional(label.consumer(f.consumer_uuid)),
             optional(f.provider_uuid), optional(label.provider(f.provider_uuid)), f.detail,
             fix)
            for f, fix in zip(findings, _fixes(findings, store), strict=True)]


def _action_rows(actions, label: names.Names):
    return [(a.consumer_uuid, optional(label.consumer(a.consumer_uuid)),
             Nested(a.allocations), a.done, a.detail)
            for a in actions]


class _ExitOnFindings(Lister):
    """A Lister whose exit status is ``self.status`` (see
    :mod:`rtframework.cmd.status`), and that says "no findings" (in table
    form) when it lists nothing."""

    status = status.OK

    def produce_output(self, parsed_args, column_names, data):
        data = list(data)
        if not data and getattr(parsed_args, "formatter", "table") == "table":
            self.app.stdout.write("no findings\n")
            return 0
        return super().produce_output(parsed_args, column_names, data)

    def _names(self) -> names.Names:
        return names.Names(self.app.backend, self.app.compute)

    def run(self, parsed_args):
        return super().run(parsed_args) or self.status

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
        self.status = status.FINDINGS if found else status.OK
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
        parser.add_argument(
            "--resource-provider", metavar="PROVIDER",
            help="Only findings about this provider (uuid or name) or about consumers "
            "holding allocations on it; with --delete, only those consumers' "
            "allocations are removed (everywhere they hold them).")
        return parser

    def take_action(self, parsed_args):
        backend, store = self.app.backend, self.app.compute
        provider = (names.provider_uuid(backend, parsed_args.resource_provider)
                    if parsed_args.resource_provider else None)
        unjudged: set[str] = set()
        found = audit.audit(backend, store, recheck_delay=parsed_args.recheck_delay,
                            stale_after=parsed_args.stale_after, unjudged=unjudged)
        if provider is not None:
            holders = set(backend.get_provider_allocations(provider))
            found = [f for f in found
                     if f.provider_uuid == provider or f.consumer_uuid in holders]
        label = self._names()
        self._say_unjudged(unjudged, label)
        self.status = status.FINDINGS if found else status.OK
        if not parsed_args.delete:
            return _FINDING_COLUMNS, _finding_rows(found, label, store)
        actions = audit.delete_orphans(backend, store, found, who=parsed_args.who,
                                       retries=self.app.conf.placement.conflict_retries)
        removed = {a.consumer_uuid for a in actions}
        # What --delete does not repair stays listed, with its fix.
        rest = [(optional(f.consumer_uuid), optional(label.consumer(f.consumer_uuid)),
                 Nested({}), False, f"{f}; fix: {fix}")
                for f, fix in zip(found, _fixes(found, store), strict=True)
                if f.consumer_uuid not in removed]
        if rest:
            self.status = status.FINDINGS
        elif any(a.done for a in actions):
            self.status = status.AUDIT_DELETED
        else:
            self.status = status.OK
        return _ACTION_COLUMNS, _action_rows(actions, label) + rest


class Heal(_ExitOnFindings):
    """Make every idle live instance hold exactly its flavor on its own node.

    Exit status 0: it healed (with --dry-run: would heal) every instance it
    had to; 4: nothing to heal; 1: --max-count left instances to heal; 3:
    an instance could not be healed.
    """

    def get_parser(self, prog_name):
        parser = _add_recheck(super().get_parser(prog_name))
        parser.add_argument("--dry-run", action="store_true",
                            help="Print what would be claimed and change nothing.")
        parser.add_argument("--who", default="heal",
                            help="Name recorded in the allocation history (default heal).")
        parser.add_argument("--instance", metavar="INSTANCE",
                            help="Heal only this instance (uuid or unique name).")
        parser.add_argument("--max-count", type=arguments.positive, metavar="N",
                            help="Heal at most N instances (in uuid order), then stop; exit "
                            "status 1 when some were left.")
        return parser

    def take_action(self, parsed_args):
        store = self.app.compute
        instance = (store.lookup_instance(parsed_args.instance).uuid
                    if parsed_args.instance else None)
        unjudged: set[str] = set()
        left: set[str] = set()
        actions = audit.heal(self.app.backend, store, dry_run=parsed_args.dry_run,
                             who=parsed_args.who, recheck_delay=parsed_args.recheck_delay,
                             retries=self.app.conf.placement.conflict_retries,
                             unjudged=unjudged, instance=instance,
                             max_count=parsed_args.max_count, left=left)
        label = self._names()
        self._say_unjudged(unjudged, label)
        if left:
            self.app.stderr.write(f"--max-count {parsed_args.max_count} reached: "
                                  f"{len(left)} instance(s) left to heal; run heal again\n")
        changed = [a for a in actions if a.done or (parsed_args.dry_run and a.allocations)]
        if any(a.failed for a in actions):
            self.status = status.FINDINGS
        elif left:
            self.status = status.FAILED
        elif changed:
            self.status = status.OK
        else:
            self.status = status.HEAL_NOTHING_TO_DO
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
             optional(label.consumer(r.consumer_uuid)), r.provider_uuid,
             optional(label.provider(r.provider_uuid)), Amounts(r.before), Amounts(r.after),
             r.who, r.why)
            for r in rows]
