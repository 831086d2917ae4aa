"""BaremetalDriver: one provider per catalogue node, one unit of its class."""

from __future__ import annotations

import dataclasses
import logging
import os

from oslo_config import cfg

from rtframework import conf as rtconf
from rtframework.driver import ComputeDriver, DriverError, InstanceSpec
from rtframework.placement.types import Inventory
from rtframework.provider_tree import ProviderTree
from rtframework_drivers.baremetal import catalogue as cat
from rtframework_drivers.baremetal import conf as baremetal_conf
from rtframework_drivers.baremetal.records import InstanceRecords
from rtframework_drivers.baremetal.reservation import reservation_reason

LOG = logging.getLogger(__name__)


class BaremetalDriver(ComputeDriver):
    """Nodes come from ``[baremetal] nodes_file``, named by their catalogue
    name (the uuid when a node has none): provider name = node name,
    provider uuid = node uuid.

    Spawning marks a node occupied in the driver's own records
    (``[baremetal] state_file``); the catalogue is never written.
    """

    def __init__(self, conf: cfg.ConfigOpts, host: str) -> None:
        super().__init__(conf, host)
        self._records: InstanceRecords | None = None
        self._cache: tuple[tuple[int, int, int], cat.Catalogue] | None = None
        self._logged_errors: set[str] = set()
        self._last_reason: dict[str, str | None] = {}

    @classmethod
    def register_opts(cls, conf: cfg.ConfigOpts) -> None:
        baremetal_conf.register_opts(conf)

    @property
    def _opts(self):
        return self.conf.baremetal

    # -- catalogue and records ------------------------------------------
    def init_host(self) -> None:
        self.catalogue()
        self.records()

    def records(self) -> InstanceRecords:
        if self._records is None:
            self._records = InstanceRecords(
                rtconf.relative_to_config_file(self.conf, "state_file", "baremetal"))
        return self._records

    def catalogue(self) -> cat.Catalogue:
        """The catalogue as the file is now; parsed again whenever it changed."""
        path = rtconf.relative_to_config_file(self.conf, "nodes_file", "baremetal")
        if not path:
            raise cat.CatalogueError("[baremetal] nodes_file is not set; the bare-metal "
                                     "driver has no nodes to report")
        try:
            st = os.stat(path)
        except OSError as exc:
            raise cat.CatalogueError(f"node catalogue {path}: {exc.strerror}") from None
        signature = (st.st_mtime_ns, st.st_size, st.st_ino)
        if self._cache is None or self._cache[0] != signature or self._cache[1].path != path:
            loaded = cat.load_catalogue(path)
            self._cache = (signature, loaded)
            for error in loaded.errors:
                if error not in self._logged_errors:
                    LOG.error("bare-metal node left out: %s: %s", path, error)
            self._logged_errors = set(loaded.errors)
        return self._cache[1]

    def _known(self) -> frozenset[str]:
        # Until the framework says which instances it knows, trust only the
        # ones this driver spawned itself.
        if self.known_instances is not None:
            return self.known_instances
        return self.records().instances()

    def _occupant(self, node: cat.Node) -> str | None:
        return node.instance_uuid or self.records().instance_on(node.uuid)

    def _provision_state(self, node: cat.Node) -> str:
        if node.instance_uuid is None and self.records().instance_on(node.uuid):
            return cat.ACTIVE  # deployed by us; the catalogue does not say so
        return node.provision_state

    # -- reporting -------------------------------------------------------
    def get_available_nodes(self) -> list[str]:
        return [node.name for node in self.catalogue().nodes]

    def get_node_uuid(self, nodename: str) -> str:
        return self.catalogue().find(nodename).uuid

    def update_provider_tree(self, tree: ProviderTree, nodename: str) -> None:
        node = self.catalogue().find(nodename)
        effective = dataclasses.replace(node, provision_state=self._provision_state(node))
        reason = reservation_reason(effective, self._occupant(node), self._known())
        # Logged when it changes, not on every periodic run.
        if node.uuid not in self._last_reason or self._last_reason[node.uuid] != reason:
            LOG.info("bare-metal node %s (%s) %s", node.name, node.uuid,
                     f"reserved: {reason}" if reason else "not reserved")
            self._last_reason[node.uuid] = reason
        root = tree.find_by_name(nodename).uuid
        tree.update_inventory(root, {
            node.resource_class: Inventory(total=1, reserved=1 if reason else 0, min_unit=1,
                                           max_unit=1, step_size=1, allocation_ratio=1.0),
        })
        tree.update_traits(root, {"COMPUTE_NODE"} | node.traits)

    # -- instances -------------------------------------------------------
    def list_instances(self) -> list[str]:
        found = {n.instance_uuid for n in self.catalogue().nodes if n.instance_uuid}
        found.update(self.records().instances())
        return sorted(found)

    def spawn(self, instance: InstanceSpec) -> None:
        node = self.catalogue().find(instance.node)
        where = f"bare-metal node {node.name} ({node.uuid})"
        if instance.resources.get(node.resource_class) != 1:
            raise DriverError(
                f"instance {instance.uuid} asks for {dict(instance.resources)}; {where} "
                f"is one unit of {node.resource_class}")
        occupant = self._occupant(node)
        if occupant == instance.uuid:
            LOG.info("instance %s already runs on %s", instance.uuid, where)
            return  # e.g. a revert starting the source copy again
        if occupant is not None:
            raise DriverError(f"{where} already runs instance {occupant}")
        if node.maintenance or node.power_state == cat.POWER_ERROR \
                or node.provision_state != cat.AVAILABLE:
            raise DriverError(
                f"{where} cannot be deployed: provision state {node.provision_state!r}, "
                f"maintenance {node.maintenance}, power state {node.power_state}")
        self.records().add(node.uuid, instance.uuid)
        LOG.info("deployed instance %s on %s", instance.uuid, where)

    def destroy(self, instance: InstanceSpec) -> None:
        records = self.records()
        try:
            nodes = self.catalogue().nodes
        except DriverError:
            nodes = ()  # a broken catalogue is reported by the periodic run
        named = [n for n in nodes if n.name == instance.node]
        # The node may have left the catalogue meanwhile: then free every
        # node of ours the instance holds.
        targets = [n.uuid for n in named] or records.nodes_of(instance.uuid)
        freed = [uuid for uuid in targets if records.remove(uuid, instance.uuid)]
        if freed:
            LOG.info("freed bare-metal node %s (%s) of instance %s", instance.node,
                     ", ".join(freed), instance.uuid)
            return
        listed = [n.name for n in nodes if n.instance_uuid == instance.uuid]
        if listed:
            LOG.warning("instance %s was not deployed by this driver; node %s still lists "
                        "it in the catalogue until the operator edits it",
                        instance.uuid, ", ".join(listed))
