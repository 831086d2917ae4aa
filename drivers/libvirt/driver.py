"""LibvirtDriver: one node per libvirt connection, sized from the host."""

from __future__ import annotations

import dataclasses
import logging
import os
import uuid as uuidlib
from typing import Any

from oslo_config import cfg
from oslo_utils import uuidutils

from rtframework import conf as rtconf
from rtframework.driver import ComputeDriver, DriverError, InstanceSpec
from rtframework.provider_tree import ProviderTree
from rtframework_drivers.libvirt import conf as libvirt_conf
from rtframework_drivers.libvirt import host
from rtframework_drivers.libvirt.domain import DomainSpec, build_domain_xml, same_size

LOG = logging.getLogger(__name__)

MISSING_BINDING = (
    "the libvirt driver needs libvirt-python: pip install 'rtframework[libvirt]'")

# Fixed namespace: one host and hypervisor hostname give one node uuid on
# every restart. The SMBIOS uuid in the capabilities is not used because
# cheap boards ship duplicated or all-zero ones.
_NAMESPACE = uuidlib.UUID("3c0b6f52-0d55-4d1e-9b0f-2f3e1f6c8a41")


def _silence(_ctx: Any, _err: Any) -> None:
    """libvirt's default handler prints every error to stderr; ours are
    raised as DriverError instead."""


class LibvirtDriver(ComputeDriver):
    """Reports the host's VCPU/PCPU/MEMORY_MB/DISK_GB (DISK_GB from a shared
    pool when configured), a VGPU child per device with mediated device
    types, and runs domains."""

    def __init__(self, conf: cfg.ConfigOpts, host_name: str) -> None:
        super().__init__(conf, host_name)
        self._libvirt: Any = None
        self._conn: Any = None
        self._caps: host.HostCapabilities | None = None
        self._virt_type = ""
        self._compute_traits: set[str] = set()

    @classmethod
    def register_opts(cls, conf: cfg.ConfigOpts) -> None:
        libvirt_conf.register_opts(conf)

    @property
    def _opts(self):
        return self.conf.libvirt

    @property
    def uri(self) -> str:
        return self._opts.connection_uri

    # -- connection ------------------------------------------------------
    def init_host(self) -> None:
        if self._conn is not None:
            return  # connected already
        try:
            import libvirt
        except ImportError:
            raise DriverError(MISSING_BINDING) from None
        libvirt.registerErrorHandler(_silence, None)
        self._libvirt = libvirt
        try:
            conn = libvirt.open(self.uri)
        except libvirt.libvirtError as exc:
            raise DriverError(
                f"cannot connect to libvirt at {self.uri}: {exc.get_error_message()}") from None
        try:
            self._start(conn)
        except Exception:
            conn.close()  # a half-checked connection is never used
            raise
        self._conn = conn
        LOG.info("connected to %s: %s host, %s guests", self.uri, self._caps.arch, self._virt_type)

    def _start(self, conn: Any) -> None:
        """Read what never changes while connected; check the options against it."""
        try:
            self._caps = host.parse_capabilities(conn.getCapabilities())
        except self._libvirt.libvirtError as exc:
            raise DriverError(f"libvirt getCapabilities on {self.uri}: "
                              f"{exc.get_error_message()}") from None
        self._virt_type = host.choose_virt_type(self._caps, self._opts.virt_type, self.uri)
        pool = self._opts.shared_storage_aggregate
        if pool is not None and not uuidutils.is_uuid_like(pool):
            raise DriverError(f"[libvirt] shared_storage_aggregate {pool!r} is not a UUID")
        self._compute_traits = {"COMPUTE_NODE"} | self._domain_capability_traits(conn)
        path = os.path.abspath(self._opts.instances_path)
        if os.path.commonpath([path, os.path.abspath(self.conf.state_path)]) == \
                os.path.abspath(self.conf.state_path):
            # Under state_path ($state_path/instances): made only if
            # state_path was chosen, as the databases are.
            rtconf.require_chosen_state_path(self.conf, f"[libvirt] instances_path {path}")
        try:
            os.makedirs(self._opts.instances_path, exist_ok=True)
        except OSError as exc:
            raise DriverError(f"[libvirt] instances_path {self._opts.instances_path}: "
                              f"{exc.strerror}") from None

    def cleanup_host(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except self._libvirt.libvirtError as exc:
                LOG.warning("closing %s: %s", self.uri, exc.get_error_message())
            self._conn = None

    def _connection(self) -> Any:
        if self._conn is None:
            self.init_host()
        return self._conn

    def _call(self, method: str, *args: Any) -> Any:
        conn = self._connection()  # outside the try: init_host raises DriverError itself
        try:
            return getattr(conn, method)(*args)
        except self._libvirt.libvirtError as exc:
            raise DriverError(
                f"libvirt {method} on {self.uri}: {exc.get_error_message()}") from None

    def _domain_capability_traits(self, conn: Any) -> set[str]:
        assert self._caps is not None
        try:
            xml = conn.getDomainCapabilities(None, self._caps.guest_arch, None,
                                                   self._virt_type)
        except self._libvirt.libvirtError as exc:
            # The test driver and old hypervisors cannot say: claim nothing.
            LOG.debug("no domain capabilities from %s: %s", self.uri, exc.get_error_message())
            return set()
        return host.domain_capability_traits(xml)

    # -- reporting -------------------------------------------------------
    def get_available_nodes(self) -> list[str]:
        return [self._opts.node_name or self._call("getHostname")]

    def get_node_uuid(self, nodename: str) -> str:
        return str(uuidlib.uuid5(_NAMESPACE, f"{self.host}/{nodename}"))

    def _check_node(self, nodename: str) -> None:
        if nodename not in self.get_available_nodes():
            raise DriverError(f"host {self.host!r} (libvirt {self.uri}) has no node {nodename!r}")

    def update_provider_tree(self, tree: ProviderTree, nodename: str) -> None:
        self._check_node(nodename)
        assert self._caps is not None
        # getInfo: [arch, memory MiB, online CPUs, MHz, NUMA nodes, sockets, cores, threads]
        info = self._call("getInfo")
        _, online_map, _ = self._call("getCPUMap")
        online = frozenset(i for i, up in enumerate(online_map) if up)
        cpus = host.split_cpus(online, info[2], self._opts.cpu_shared_set,
                               self._opts.cpu_dedicated_set, nodename)
        root = tree.find_by_name(nodename).uuid
        pool = self._opts.shared_storage_aggregate
        tree.update_inventory(root, host.inventories([
            ("VCPU", cpus.vcpu),
            ("PCPU", cpus.pcpu),
            ("MEMORY_MB", info[1]),
            # On a shared pool the disk is the pool's, claimed there.
            ("DISK_GB", 0 if pool else host.disk_gb(self._opts.instances_path)),
        ]))
        tree.update_traits(root, host.capability_traits(self._caps) | self._compute_traits)
        tree.update_aggregates(root, {str(uuidlib.UUID(pool))} if pool else set())
        for gpu in self._mdev_parents():
            name = f"{nodename}_{gpu.name}"
            uuid = str(uuidlib.uuid5(_NAMESPACE, f"{self.host}/{name}"))
            if not tree.exists(uuid):
                tree.new_child(name, root, uuid)
            tree.update_inventory(uuid, host.inventories([("VGPU", gpu.total)]))

    def _mdev_parents(self) -> list[host.MdevParent]:
        """The host's devices offering mediated devices, if the connection
        can list node devices (a remote test URI or an old daemon cannot)."""
        lv = self._libvirt
        try:
            parents = self._conn_devices(lv.VIR_CONNECT_LIST_NODE_DEVICES_CAP_MDEV_TYPES)
            mdevs = self._conn_devices(lv.VIR_CONNECT_LIST_NODE_DEVICES_CAP_MDEV)
        except lv.libvirtError as exc:
            LOG.debug("no node devices from %s: %s", self.uri, exc.get_error_message())
            return []
        return host.mdev_parents(parents, mdevs, self._opts.mdev_types)

    def _conn_devices(self, flag: int) -> list[str]:
        return [dev.XMLDesc(0) for dev in self._connection().listAllDevices(flag)]

    # -- instances -------------------------------------------------------
    def list_instances(self) -> list[str]:
        return [dom.UUIDString() for dom in self._call("listAllDomains")]

    def _lookup(self, uuid: str) -> Any:
        conn = self._connection()
        try:
            return conn.lookupByUUIDString(uuid)
        except self._libvirt.libvirtError as exc:
            if exc.get_error_code() == self._libvirt.VIR_ERR_NO_DOMAIN:
                return None
            raise DriverError(f"libvirt lookup of {uuid} on {self.uri}: "
                              f"{exc.get_error_message()}") from None

    def _domain_spec(self, instance: InstanceSpec) -> DomainSpec:
        vcpu = int(instance.resources.get("VCPU", 0))
        pcpu = int(instance.resources.get("PCPU", 0))
        memory_mb = int(instance.resources.get("MEMORY_MB", 0))
        if vcpu + pcpu <= 0 or memory_mb <= 0:
            raise DriverError(
                f"instance {instance.uuid} needs VCPU or PCPU and MEMORY_MB to run; "
                f"flavor {instance.flavor_name!r} asks for {dict(instance.resources)}")
        # Keep floating guests off dedicated CPUs and pinned guests off shared ones.
        cpuset: frozenset[int] = frozenset()
        if vcpu and self._opts.cpu_shared_set:
            cpuset |= self._opts.cpu_shared_set
        if pcpu and self._opts.cpu_dedicated_set:
            cpuset |= self._opts.cpu_dedicated_set
        assert self._caps is not None
        return DomainSpec(uuid=instance.uuid, name=instance.name or instance.uuid,
                          virt_type=self._virt_type, arch=self._caps.guest_arch,
                          vcpus=vcpu + pcpu, memory_mb=memory_mb, cpuset=cpuset,
                          flavor_name=instance.flavor_name)

    def spawn(self, instance: InstanceSpec) -> None:
        """Run ``instance`` with its flavor's size. Idempotent: a domain of
        this uuid that already runs with that size is left alone, one with
        another size (a same-host resize) is redefined and restarted."""
        self._check_node(instance.node)
        spec = self._domain_spec(instance)
        libvirt = self._libvirt
        existing = self._lookup(instance.uuid)
        try:
            if existing is not None:
                if existing.isActive() and same_size(existing.XMLDesc(), spec):
                    LOG.info("instance %s already runs as domain %s on node %s",
                             instance.uuid, existing.name(), instance.node)
                    return
                # Keep the domain's name: libvirt refuses renaming on redefine.
                spec = dataclasses.replace(spec, name=existing.name())
                if existing.isActive():
                    existing.destroy()
            domain = self._conn.defineXML(build_domain_xml(spec))
        except libvirt.libvirtError as exc:
            raise DriverError(f"defining domain {spec.name!r} for instance {instance.uuid} on "
                              f"{self.uri}: {exc.get_error_message()}") from None
        try:
            domain.create()
        except libvirt.libvirtError as exc:
            if existing is None:
                domain.undefine()  # a failed boot leaves nothing behind
            raise DriverError(f"starting domain {spec.name!r} for instance {instance.uuid} on "
                              f"{self.uri}: {exc.get_error_message()}") from None
        LOG.info("%s domain %s for instance %s on node %s: %d vCPU, %d MiB",
                 "restarted" if existing is not None else "spawned", spec.name,
                 instance.uuid, instance.node, spec.vcpus, spec.memory_mb)

    def destroy(self, instance: InstanceSpec) -> None:
        domain = self._lookup(instance.uuid)
        if domain is None:
            return
        libvirt = self._libvirt
        try:
            if domain.isActive():
                domain.destroy()
            domain.undefine()
        except libvirt.libvirtError as exc:
            if exc.get_error_code() == libvirt.VIR_ERR_NO_DOMAIN:
                return  # removed by someone else meanwhile: the goal is reached
            raise DriverError(f"destroying domain of instance {instance.uuid} on {self.uri}: "
                              f"{exc.get_error_message()}") from None
        LOG.info("destroyed domain of instance %s on node %s", instance.uuid, instance.node)
