"""FakeDriver: nodes sized by [fake_driver], instances kept in memory."""

from __future__ import annotations

import uuid as uuidlib
from collections.abc import Callable

from oslo_config import cfg

from rtframework.driver import ComputeDriver, DriverError, InstanceSpec
from rtframework.placement.types import Inventory
from rtframework.provider_tree import ProviderTree
from rtframework_drivers.fake import conf as fake_conf

# Fixed namespace: the same host and node give the same uuid on every
# machine and every restart.
_NAMESPACE = uuidlib.UUID("6a1f1b8e-1f0c-4b57-9d0e-7c1f4d3e2a10")


class FakeDriver(ComputeDriver):
    """Reports [fake_driver] sizes; spawn and destroy only update a dict.

    ``fail_spawn`` (a callable taking the InstanceSpec and returning True to
    fail) lets a test make one particular spawn fail.
    """

    def __init__(self, conf: cfg.ConfigOpts, host: str) -> None:
        super().__init__(conf, host)
        self.instances: dict[str, InstanceSpec] = {}
        self.fail_spawn: Callable[[InstanceSpec], bool] | None = None

    @classmethod
    def register_opts(cls, conf: cfg.ConfigOpts) -> None:
        fake_conf.register_opts(conf)

    @property
    def _opts(self):
        return self.conf.fake_driver

    def get_available_nodes(self) -> list[str]:
        return list(self._opts.nodes) or [self.host]

    def get_node_uuid(self, nodename: str) -> str:
        return str(uuidlib.uuid5(_NAMESPACE, f"{self.host}/{nodename}"))

    def child_name(self, nodename: str) -> str:
        """The device child's name (the first one's, with several)."""
        return self.child_names(nodename)[0]

    def child_names(self, nodename: str) -> list[str]:
        base = f"{nodename}_{self._opts.child_resource_class}"
        count = self._opts.child_count
        return [base] if count == 1 else [f"{base}_{i}" for i in range(count)]

    def provider_uuid(self, name: str) -> str:
        """The stable uuid of a provider this driver names."""
        return str(uuidlib.uuid5(_NAMESPACE, f"{self.host}/{name}"))

    def update_provider_tree(self, tree: ProviderTree, nodename: str) -> None:
        opts = self._opts
        root = tree.find_by_name(nodename).uuid
        on_root = {"VCPU": Inventory(total=opts.vcpus, max_unit=opts.vcpus)}
        numa = self._numa_children(tree, nodename, root)
        if not numa:
            on_root["MEMORY_MB"] = Inventory(total=opts.memory_mb, max_unit=opts.memory_mb)
            if opts.pcpus:
                on_root["PCPU"] = Inventory(total=opts.pcpus, max_unit=opts.pcpus)
        if opts.shared_storage_aggregate:
            tree.update_aggregates(root, {opts.shared_storage_aggregate})
        else:
            on_root["DISK_GB"] = Inventory(total=opts.disk_gb, max_unit=opts.disk_gb)
            tree.update_aggregates(root, set())
        tree.update_inventory(root, on_root)
        tree.update_traits(root, set(opts.traits))
        for i in range(opts.gpus):
            parent = numa[i % len(numa)] if numa else root
            gpu = self._child(tree, f"{nodename}_GPU{i}", parent)
            tree.update_inventory(gpu, {"VGPU": Inventory(total=opts.vgpus_per_gpu,
                                                          max_unit=opts.vgpus_per_gpu)})
        if opts.child_resource_class:
            for name in self.child_names(nodename):
                child_uuid = self._child(tree, name, root)
                tree.update_inventory(child_uuid, {
                    opts.child_resource_class: Inventory(total=opts.child_total,
                                                         max_unit=opts.child_total),
                })
                tree.update_traits(child_uuid, set(opts.child_traits))

    def _child(self, tree: ProviderTree, name: str, parent: str) -> str:
        uuid = self.provider_uuid(name)
        if not tree.exists(uuid):
            tree.new_child(name, parent, uuid)
        return uuid

    def _numa_children(self, tree: ProviderTree, nodename: str, root: str) -> list[str]:
        """The NUMA children, each with its share of PCPU and MEMORY_MB."""
        opts = self._opts
        count = opts.numa_nodes
        children = []
        for i in range(count):
            child = self._child(tree, f"{nodename}_NUMA{i}", root)
            memory = opts.memory_mb // count
            inventory = {"MEMORY_MB": Inventory(total=memory, max_unit=memory)}
            if opts.pcpus // count:
                pcpus = opts.pcpus // count
                inventory["PCPU"] = Inventory(total=pcpus, max_unit=pcpus)
            tree.update_inventory(child, inventory)
            children.append(child)
        return children

    def list_instances(self) -> list[str]:
        return list(self.instances)

    def spawn(self, instance: InstanceSpec) -> None:
        if instance.node not in self.get_available_nodes():
            raise DriverError(f"host {self.host!r} has no node {instance.node!r}")
        if self._opts.fail_spawn or (self.fail_spawn and self.fail_spawn(instance)):
            raise DriverError(f"fake spawn of instance {instance.uuid} on {instance.node} failed")
        self.instances[instance.uuid] = instance

    def destroy(self, instance: InstanceSpec) -> None:
        self.instances.pop(instance.uuid, None)
