"""``rtf db sync``: bring the databases to the newest schema; ``rtf db
recount-usage``: recount the usage the sql backend stores per inventory."""

from __future__ import annotations

from cliff.command import Command


class DbSync(Command):
    """Run the schema migrations of the placement and compute databases."""

    def take_action(self, parsed_args):
        from rtframework import db
        from rtframework.compute import store
        from rtframework.placement.sql.backend import sync_schema

        conf = self.app.conf
        self.app.stdout.write(db.describe_upgrade("placement", *sync_schema(conf)) + "\n")
        self.app.stdout.write(db.describe_upgrade("compute", *store.sync_schema(conf)) + "\n")
        return 0


class DbRecountUsage(Command):
    """Recount the usage the sql placement backend stores per inventory.

    Sets each stored usage to the sum of its allocations and lists what
    changed (the fix for a ``usage_mismatch`` finding). Allocation writes
    wait while it runs.
    """

    def take_action(self, parsed_args):
        from rtframework.placement.sql.backend import recount_usage

        changed = recount_usage(self.app.conf)
        for provider, rc, stored, counted in changed:
            self.app.stdout.write(
                f"provider {provider} {rc}: stored usage {stored} -> {counted}\n")
        self.app.stdout.write(f"placement database: {len(changed)} inventory usage(s) "
                              f"recounted\n")
        return 0
