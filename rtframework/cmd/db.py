"""``rtf db sync``: bring the databases to the newest schema."""

from __future__ import annotations

import logging

from cliff.command import Command

LOG = logging.getLogger(__name__)


class DbSync(Command):
    """Run the schema migrations of the placement and compute databases."""

    def take_action(self, parsed_args):
        from rtframework.placement.sql.backend import sync_schema

        conf = self.app.conf
        sync_schema(conf)
        self.app.stdout.write("placement database: up to date\n")
        try:
            from rtframework.compute import store
        except ImportError:
            # The compute records store is optional in this checkout.
            LOG.debug("no compute store installed; only the placement schema was synced")
            return 0
        store.sync_schema(conf)
        self.app.stdout.write("compute database: up to date\n")
        return 0
