"""``rtf instances show`` and ``rtf migrations show``: one record, with what
placement holds for it."""

from __future__ import annotations

from cliff.show import ShowOne

from rtframework.cmd import arguments, names
from rtframework.cmd.columns import Nested, Optional
from rtframework.cmd.instances import _COLUMNS as INSTANCE_COLUMNS
from rtframework.cmd.instances import _row as instance_row
from rtframework.cmd.moves import _COLUMNS as MIGRATION_COLUMNS
from rtframework.cmd.moves import migration_row
from rtframework.compute import values as cv


def _when(at) -> str:
    return at.isoformat(timespec="seconds")


class InstancesShow(ShowOne):
    """Show one instance: its record, its moves, what it holds in placement."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("instance", metavar="INSTANCE",
                            help="Instance uuid or unique name.")
        return parser

    def take_action(self, parsed_args):
        store, backend = self.app.compute, self.app.backend
        instance = store.lookup_instance(parsed_args.instance)
        held = backend.get_consumer_allocations(instance.uuid)
        unfinished = store.list_migrations(instance_uuid=instance.uuid,
                                           statuses=cv.UNFINISHED_MIGRATION_STATUSES)
        return (INSTANCE_COLUMNS + ("User", "Created", "Updated", "Allocations",
                                    "Unfinished migration"),
                instance_row(instance) + (instance.user_id, _when(instance.created_at),
                                          _when(instance.updated_at), Nested(held.allocations),
                                          Optional(unfinished[-1].uuid if unfinished else None)))


class MigrationsShow(ShowOne):
    """Show one migration and what its consumer holds in placement."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("migration", metavar="MIGRATION", type=arguments.uuid,
                            help="Migration uuid.")
        return parser

    def take_action(self, parsed_args):
        store, backend = self.app.compute, self.app.backend
        migration = store.get_migration(parsed_args.migration)
        name = names.Names(backend, store).consumer(migration.instance_uuid)
        held = backend.get_consumer_allocations(migration.uuid)
        return (MIGRATION_COLUMNS + ("Created", "Allocations"),
                migration_row(migration, name) + (_when(migration.created_at),
                                                  Nested(held.allocations)))
