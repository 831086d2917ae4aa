"""``rtf db sync``: bring the databases to the newest schema."""

from __future__ import annotations

from cliff.command import Command


class DbSync(Command):
    """Run the schema migrations of the placement and compute databases."""

    def take_action(self, parsed_args):
        from rtframework.compute import store
        from rtframework.placement.sql.backend import sync_schema

        conf = self.app.conf
        sync_schema(conf)
        self.app.stdout.write("placement database: up to date\n")
        store.sync_schema(conf)
        self.app.stdout.write("compute database: up to date\n")
        return 0
