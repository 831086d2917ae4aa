"""``rtf migrate|resize|live-migrate|evacuate|confirm|revert`` and ``rtf migrations list``.

These commands act on the records and on placement; the hosts' agents
(``rtf compute run``) start and stop the guests. A refused move prints
one line and exits non-zero with nothing changed.
"""

from __future__ import annotations

from cliff.lister import Lister
from cliff.show import ShowOne

from rtframework.cmd import arguments, names
from rtframework.cmd.columns import Flavor, Optional, optional
from rtframework.cmd.instances import parse_resources
from rtframework.compute import values as cv
from rtframework.moves import evacuate, live, migrate, resize
from rtframework.moves.context import MoveContext

_COLUMNS = ("UUID", "Instance", "Instance name", "Type", "Status", "Source host", "Source node",
            "Dest host", "Dest node", "Old flavor", "New flavor", "Claim strategy", "Updated")


def _flavor(flavor: cv.Flavor) -> Flavor:
    return Flavor(flavor.name, flavor.resources)


def migration_row(m: cv.Migration, instance_name: str = "") -> tuple:
    return (m.uuid, m.instance_uuid, optional(instance_name), m.migration_type, m.status,
            Optional(m.source_host), Optional(m.source_node), Optional(m.dest_host),
            Optional(m.dest_node), _flavor(m.old_flavor), _flavor(m.new_flavor),
            m.claim_strategy, m.updated_at.isoformat(timespec="seconds"))


class _MoveCommand(ShowOne):
    def context(self) -> MoveContext:
        return MoveContext(self.app.conf, self.app.backend, self.app.compute)

    def show(self, migration: cv.Migration):
        name = names.Names(self.app.backend, self.app.compute).consumer(migration.instance_uuid)
        return _COLUMNS, migration_row(migration, name)

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("instance", metavar="INSTANCE", help="Instance uuid or unique name.")
        parser.add_argument("--to", metavar="HOST", dest="to_host",
                            help="Destination host (default: the scheduler chooses).")
        return parser


class Migrate(_MoveCommand):
    """Cold-migrate an instance to another host; then confirm or revert."""

    def take_action(self, parsed_args):
        return self.show(migrate.migrate(self.context(), parsed_args.instance,
                                         to_host=parsed_args.to_host))


class Resize(_MoveCommand):
    """Resize an instance to a new flavor, then confirm or revert.

    The same host is allowed: it holds old and new flavor until confirmed.
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("--flavor", required=True, metavar="CLASS=AMOUNT[,...]",
                            help="The new flavor's resources, e.g. VCPU=2,MEMORY_MB=1024,"
                            "DISK_GB=10.")
        parser.add_argument("--flavor-name", type=arguments.name,
                            help="Default: made from the resources.")
        return parser

    def take_action(self, parsed_args):
        resources = parse_resources(parsed_args.flavor, "--flavor")
        if not resources:
            raise ValueError("--flavor names no resources")
        name = parsed_args.flavor_name or "-".join(
            f"{rc.lower()}{n}" for rc, n in sorted(resources.items()))
        return self.show(resize.run(self.context(), parsed_args.instance,
                                    cv.Flavor(name, resources), to_host=parsed_args.to_host))


class LiveMigrate(_MoveCommand):
    """Live-migrate an instance; --abort or --fail roll it back instead.

    A rollback leaves the guest on its source, which shows what an aborted
    or failed live migration leaves behind.
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        ending = parser.add_mutually_exclusive_group()
        ending.add_argument("--abort", action="store_true",
                            help="Abort it while it runs (status cancelled).")
        ending.add_argument("--fail", action="store_true",
                            help="Let it fail while it runs (status failed).")
        return parser

    def take_action(self, parsed_args):
        ctx = self.context()
        started = live.start(ctx, parsed_args.instance, to_host=parsed_args.to_host)
        if parsed_args.abort or parsed_args.fail:
            # A failed migration is a failed step (exit 1); an abort is what
            # was asked for.
            self.failed = parsed_args.fail
            return self.show(live.rollback(ctx, started.uuid, abort=parsed_args.abort))
        return self.show(live.complete(ctx, started.uuid))


class Evacuate(_MoveCommand):
    """Rebuild an instance of a down host on another host.

    Only from a host that is down (or forced down). The source's half of
    the claim is removed by the source itself when it comes back.
    """

    def take_action(self, parsed_args):
        return self.show(evacuate.evacuate(self.context(), parsed_args.instance,
                                           to_host=parsed_args.to_host))


class _FinishCommand(_MoveCommand):
    def get_parser(self, prog_name):
        parser = super(_MoveCommand, self).get_parser(prog_name)
        parser.add_argument("migration", metavar="MIGRATION", type=arguments.uuid,
                            help="Migration uuid.")
        return parser


class Confirm(_FinishCommand):
    """Confirm a resize or cold migration: keep the destination.

    Confirming twice is harmless.
    """

    def take_action(self, parsed_args):
        return self.show(resize.confirm(self.context(), parsed_args.migration))


class Revert(_FinishCommand):
    """Revert a resize or cold migration: back to the source and old flavor."""

    def take_action(self, parsed_args):
        return self.show(resize.revert(self.context(), parsed_args.migration))


class MigrationsList(Lister):
    """List migrations, oldest first."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("--instance", help="Only this instance's (uuid or unique name).")
        parser.add_argument("--host", help="Only those with this source or destination host.")
        parser.add_argument("--status", action="append", type=arguments.migration_status,
                            help="Only those in this status (repeatable).")
        parser.add_argument("--unfinished", action="store_true",
                            help="Only moves still in flight (including verify-resize).")
        return parser

    def take_action(self, parsed_args):
        store = self.app.compute
        instance = store.lookup_instance(parsed_args.instance).uuid \
            if parsed_args.instance else None
        statuses = parsed_args.status
        if parsed_args.unfinished:
            statuses = sorted(set(statuses or cv.UNFINISHED_MIGRATION_STATUSES)
                              & cv.UNFINISHED_MIGRATION_STATUSES)
        found = store.list_migrations(instance_uuid=instance, host=parsed_args.host,
                                      statuses=statuses)
        label = names.Names(self.app.backend, store)
        return _COLUMNS, [migration_row(m, label.consumer(m.instance_uuid)) for m in found]
