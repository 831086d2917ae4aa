"""Hosts that run a real bundled driver, each with its own configuration
(as separate machines would), trackers on one test database (the functional
``store`` fixture) and the placement backend RTF_TEST_BACKEND selects, empty
(``fresh_backend``: the sql backend, or a real Placement)."""

from __future__ import annotations

from oslo_config import cfg

from rtframework import conf as rtconf
from rtframework.compute.values import Flavor, Instance
from rtframework.driver import ComputeDriver
from rtframework.moves.context import MoveContext
from rtframework.tracker import ResourceTracker

PROJECT, USER = "proj", "user"


def host_conf(driver_cls: type[ComputeDriver], group: str, **opts) -> cfg.ConfigOpts:
    """The configuration one host's driver reads (its own file, in real life)."""
    c = rtconf.new_conf()
    driver_cls.register_opts(c)
    c([], project="rtframework", default_config_files=[])
    for name, value in opts.items():
        c.set_override(name, value, group)
    return c


class Cloud:
    """Hosts by name, each a driver and its tracker; moves see every driver."""

    def __init__(self, conf, backend, store, driver_name: str) -> None:  # noqa: F811
        self.conf = conf
        self.backend = backend
        self.store = store
        self.driver_name = driver_name
        self.trackers: dict[str, ResourceTracker] = {}
        self.ctx = MoveContext(conf, backend, store, drivers={})

    def add_host(self, host: str, driver: ComputeDriver) -> ResourceTracker:
        driver.init_host()
        tracker = ResourceTracker(self.conf, host, driver, self.backend, self.store,
                                  driver_name=self.driver_name)
        self.trackers[host] = tracker
        self.ctx.drivers[host] = driver
        tracker.update_available_resource()
        return tracker

    def boot(self, host: str, flavor: Flavor, name: str = "vm") -> Instance:
        return self.trackers[host].boot(name, flavor, project_id=PROJECT, user_id=USER)

    def providers(self) -> dict[str, str]:
        """provider name -> uuid."""
        return {p.name: p.uuid for p in self.backend.list_providers()}

    def inventory(self, name: str) -> dict[str, tuple[int, int, float]]:
        """class -> (total, reserved, ratio) of the provider named ``name``."""
        inv = self.backend.get_inventories(self.providers()[name]).inventories
        return {rc: (i.total, i.reserved, i.allocation_ratio) for rc, i in inv.items()}

    def traits(self, name: str) -> set[str]:
        return set(self.backend.get_provider_traits(self.providers()[name]).traits)

    def usages(self) -> dict[str, dict[str, int]]:
        """provider name -> non-zero usages, for every provider."""
        return {p.name: {rc: n for rc, n in self.backend.get_provider_usages(p.uuid).items()
                         if n}
                for p in self.backend.list_providers()}

    def shutdown(self) -> None:
        for driver in self.ctx.drivers.values():
            driver.cleanup_host()
