"""Where a move reads and writes, and the drivers it may start guests with."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from oslo_config import cfg

from rtframework.compute import values as v
from rtframework.compute.store import ComputeStore
from rtframework.driver import ComputeDriver, InstanceSpec
from rtframework.placement.backend import PlacementBackend


@dataclass(frozen=True)
class MoveContext:
    """Where moves read and write: configuration, placement, compute records."""

    conf: cfg.ConfigOpts
    backend: PlacementBackend
    store: ComputeStore
    # host -> its driver, when the hosts run in this process (demo, tests);
    # moves then start the guest on the destination and remove the copy
    # that is left behind. Without it, only records and claims change.
    drivers: Mapping[str, ComputeDriver] = field(default_factory=dict)

    def spawn(self, host: str | None, instance: v.Instance, node: str | None,
              flavor: v.Flavor) -> None:
        driver = self.drivers.get(host or "")
        if driver is not None and node is not None:
            driver.spawn(spec(instance, node, flavor))

    def destroy(self, host: str | None, instance: v.Instance, node: str | None) -> None:
        driver = self.drivers.get(host or "")
        if driver is not None and node is not None:
            driver.destroy(spec(instance, node, instance.flavor))


def spec(instance: v.Instance, node: str, flavor: v.Flavor) -> InstanceSpec:
    return InstanceSpec(uuid=instance.uuid, name=instance.name, node=node,
                        resources=dict(flavor.resources), flavor_name=flavor.name)
