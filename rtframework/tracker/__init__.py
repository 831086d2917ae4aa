"""ResourceTracker: one host's periodic report, its heal and its instances.

The tracker composes three jobs, each in its own module:

* :mod:`~rtframework.tracker.provider_sync` (Nova's report client): the
  periodic run asks the driver what each node has and brings placement in
  line;
* :mod:`~rtframework.tracker.heal`: then heals allocations on the host's
  providers by the rules of :mod:`rtframework.heal_rules`;
* :mod:`~rtframework.tracker.instances` (Nova's compute manager): boot,
  delete, shelve offload and unshelve, on the same
  :class:`~rtframework.moves.context.MoveContext` the moves use.

All backend calls go through a
:class:`~rtframework.placement.counting.CountingBackend`; ``tracker.stats``
holds the counts. One lock serializes the periodic run and the instance
operations of one tracker.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import os_traits
from oslo_config import cfg

from rtframework.compute import values as cv
from rtframework.compute.store import ComputeStore
from rtframework.compute.values import ComputeNode, Flavor, HostRecords, Instance
from rtframework.driver import ComputeDriver, InstanceSpec
from rtframework.moves.context import MoveContext
from rtframework.placement import types as t
from rtframework.placement.backend import PlacementBackend
from rtframework.placement.counting import CallStats, CountingBackend
from rtframework.provider_tree import ProviderTree
from rtframework.tracker import instances
from rtframework.tracker.allocation_log import format_resources, log_allocations
from rtframework.tracker.heal import Healer, HealState
from rtframework.tracker.instances import (
    BootFailed,
    InvalidFlavor,
    InvalidInstanceState,
    NoCapacity,
    NotOwned,
    TrackerError,
    UnknownNode,
    validate_flavor,
)
from rtframework.tracker.provider_sync import NodeReport, NodeState, Progress, ProviderSync

__all__ = [
    "BootFailed", "InvalidFlavor", "InvalidInstanceState", "NoCapacity", "NodeReport",
    "NotOwned", "ResourceTracker", "TrackerError", "UnknownNode", "format_resources",
    "log_allocations", "validate_flavor",
]

LOG = logging.getLogger(__name__)


@dataclass
class _Node:
    """What the tracker keeps of one node between runs."""

    sync: NodeState
    heal: HealState = field(default_factory=HealState)


class ResourceTracker:
    """Resource accounting of one host: ``driver`` reports, ``backend``
    (placement) holds the truth, ``compute_store`` says who owns what."""

    def __init__(
        self,
        conf: cfg.ConfigOpts,
        host: str,
        driver: ComputeDriver,
        backend: PlacementBackend,
        compute_store: ComputeStore,
        driver_name: str | None = None,
    ) -> None:
        self.conf = conf
        self.host = host
        self.driver = driver
        self.compute = compute_store
        self.driver_name = driver_name or conf.compute_driver
        if isinstance(backend, CountingBackend):
            self.backend = backend
        else:
            self.backend = CountingBackend(backend)
        self.stats: CallStats = self.backend.stats
        self._ctx = MoveContext(conf, self.backend, compute_store, {host: driver})
        self._sync = ProviderSync(conf, host, self.backend, compute_store)
        self._healer = Healer(conf, host, self.backend, compute_store)
        self._nodes: dict[str, _Node] = {}
        self._disabled = False
        self._lock = threading.RLock()

    # -- helpers other modules use ----------------------------------------
    def nodes(self) -> list[str]:
        """Names of the nodes this host's driver manages."""
        return self.driver.get_available_nodes()

    def node_root_uuid(self, nodename: str) -> str:
        """Root resource provider uuid of one of this host's nodes (the same
        as ``ComputeStore.node_root_uuid(host, nodename)`` once reported)."""
        return self.driver.get_node_uuid(nodename)

    def instance_flavor(self, instance_uuid: str) -> Flavor:
        """The flavor an instance claims now."""
        return self.compute.instance_flavor(instance_uuid)

    def instance_spec(self, instance: Instance, node: str | None = None) -> InstanceSpec:
        """What the driver needs to run ``instance`` on ``node`` (default: its own)."""
        return instances.instance_spec(instance, node)

    def known_instances(self) -> set[str]:
        """Instances the framework has on this host: those recorded here and
        those of unfinished moves to or from it (a destination runs the guest
        before the record names it as host)."""
        live = self.compute.instance_uuids(host=self.host, vm_state_not=cv.DELETED)
        moving = self.compute.list_migrations(
            host=self.host, statuses=cv.UNFINISHED_MIGRATION_STATUSES)
        return set(live) | {m.instance_uuid for m in moving}

    # -- the periodic run --------------------------------------------------
    def update_available_resource(self) -> list[NodeReport]:
        """Report every node, remove nodes that vanished, heal. One pass."""
        with self._lock:
            try:
                nodes = self.driver.get_available_nodes()
                roots = {nodename: self.node_root_uuid(nodename) for nodename in nodes}
            except Exception:
                # A host whose driver fails is still alive.
                self.compute.heartbeat(self.host)
                raise
            # One transaction: the heartbeat, the node records and every
            # record the pass reads (its heal decisions included).
            records = self.compute.heartbeat_and_records(self.host, roots, self.driver_name)
            # A disabled host says so on its nodes, as Nova's computes do,
            # so that placement queries can leave it out too.
            self._disabled = records.service.disabled
            self.driver.set_known_instances(records.known_instances(self.host))
            reports = [self._update_node(nodename, roots[nodename], records)
                       for nodename in nodes]
            # (The node records were read after this pass recorded its nodes.)
            reports.extend(self._remove_vanished_nodes(nodes, records.compute_nodes))
            return reports

    def _update_node(self, nodename: str, root: str, records: HostRecords) -> NodeReport:
        progress = Progress()
        tree = ProviderTree()
        tree.new_root(nodename, root)
        self.driver.update_provider_tree(tree, nodename)
        if self._disabled:
            tree.add_traits(root, os_traits.COMPUTE_STATUS_DISABLED)
        self._healer.learn_tree(root, tree)
        node = self._nodes.get(nodename)
        synced, generations = self._sync.sync_node(node.sync if node else None, root, tree,
                                                   progress)
        if node is None or node.sync is not synced:
            node = self._nodes[nodename] = _Node(synced)
        self._healer.heal(node.heal, tree, synced, generations, progress, records)
        return progress.report(nodename, root)

    def _remove_vanished_nodes(self, nodes: Iterable[str],
                               recorded: Iterable[ComputeNode]) -> list[NodeReport]:
        reports, gone = self._sync.remove_vanished_nodes(nodes, recorded)
        for nodename in gone:
            self._nodes.pop(nodename, None)
        return reports

    # -- instances ----------------------------------------------------------
    def boot(self, name: str, flavor: Flavor, *, project_id: str, user_id: str,
             node: str | None = None, uuid: str | None = None) -> Instance:
        """See :func:`rtframework.tracker.instances.boot`."""
        with self._lock:
            return instances.boot(self._ctx, self.host, name, flavor, project_id=project_id,
                                  user_id=user_id, node=node, uuid=uuid)

    def delete(self, ref: str) -> Instance:
        """See :func:`rtframework.tracker.instances.delete`."""
        with self._lock:
            return instances.delete(self._ctx, self.host, ref)

    def shelve_offload(self, ref: str) -> Instance:
        """See :func:`rtframework.tracker.instances.shelve_offload`."""
        with self._lock:
            return instances.shelve_offload(self._ctx, self.host, ref)

    def unshelve(self, ref: str, node: str | None = None) -> Instance:
        """See :func:`rtframework.tracker.instances.unshelve`."""
        with self._lock:
            return instances.unshelve(self._ctx, self.host, ref, node)

    def claim(self, consumer: str, resources: Mapping[str, int], nodename: str, *,
              project_id: str, user_id: str, reason: str) -> t.Allocations:
        """See :func:`rtframework.tracker.instances.claim`."""
        return instances.claim(self._ctx, self.host, consumer, resources, nodename,
                               project_id=project_id, user_id=user_id, reason=reason)

    def release(self, consumers: Sequence[str], reason: str) -> None:
        """See :func:`rtframework.tracker.instances.release`."""
        instances.release(self._ctx, consumers, reason)
