"""``rtf drivers list``: the hypervisor drivers installed."""

from __future__ import annotations

import importlib.metadata

from cliff.lister import Lister

from rtframework import driver


class DriversList(Lister):
    """List the compute drivers registered in 'rtframework.drivers'."""

    def take_action(self, parsed_args):
        rows = []
        found = importlib.metadata.entry_points(group=driver.NAMESPACE)
        for ep in sorted(found, key=lambda e: e.name):
            dist = ep.dist.name if ep.dist else ""
            rows.append((ep.name, ep.value, dist))
        return ("Name", "Entry point", "Distribution"), rows
