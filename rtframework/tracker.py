"""ResourceTracker: one host's periodic report, its claims and its heal.

The periodic run (:meth:`ResourceTracker.update_available_resource`) asks
the driver what each node has, applies the framework's reserved host
resources and allocation ratios, and brings placement in line, then heals
allocations on the host's providers by the rules of
:mod:`rtframework.heal_rules`.

A run with nothing changed writes nothing and reads one thing per node:
the generation of every provider of the node's tree (one listing), which
says whether anyone (an operator, a claim, a heal) touched any of them
since the last run. A provider is re-checked when the driver reports it
differently or its generation moved, and the heal re-reads allocations
when any generation of the tree moved (a write bumps only the providers
it touches, so a claim of a child's class leaves the root alone). All
backend calls go through a
:class:`~rtframework.placement.counting.CountingBackend`; ``tracker.stats``
holds the counts.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import os_resource_classes as orc
import os_traits
from oslo_config import cfg

from rtframework import accounting, claim_request, heal_rules, history, retry, room, sharing
from rtframework.compute import errors as cerrors
from rtframework.compute import flavors
from rtframework.compute import values as cv
from rtframework.compute.store import ComputeStore
from rtframework.compute.values import Flavor, Instance
from rtframework.driver import ComputeDriver, DriverError, InstanceSpec
from rtframework.moves import delete, preconditions
from rtframework.moves import errors as merrors
from rtframework.moves.common import MoveContext
from rtframework.placement import errors as perrors
from rtframework.placement import types as t
from rtframework.placement import validation
from rtframework.placement.backend import PlacementBackend
from rtframework.placement.counting import CallStats, CountingBackend
from rtframework.provider_tree import ProviderData, ProviderTree

LOG = logging.getLogger(__name__)


# What _root_uuid answers for a sharing provider (a pool is no node).
_SHARED = ""


class TrackerError(Exception):
    """A tracker operation cannot be done; the message says why."""


class NoCapacity(TrackerError):
    """No node of the host can hold the request."""


class BootFailed(TrackerError):
    """The driver failed to start the instance; its claim was removed."""


class NotOwned(TrackerError):
    """The instance belongs to another host."""


class InvalidInstanceState(TrackerError):
    """The instance is not in a state the operation accepts."""


class InvalidFlavor(TrackerError):
    """A flavor asks for no resources, a bad class or a bad amount."""


class UnknownNode(TrackerError):
    """The host has no node of the name asked for."""


@dataclass(frozen=True)
class NodeReport:
    """What one periodic run did for one node."""

    nodename: str
    uuid: str
    created: tuple[str, ...] = ()
    updated: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    kept: tuple[str, ...] = ()  # vanished providers kept because they are in use
    healed: tuple[str, ...] = ()  # consumers whose allocations were removed
    findings: tuple[str, ...] = ()  # "consumer: kind"
    errors: tuple[str, ...] = ()


@dataclass
class _Progress:
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    healed: list[str] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def report(self, nodename: str, uuid: str) -> NodeReport:
        return NodeReport(nodename, uuid, *(tuple(getattr(self, f)) for f in (
            "created", "updated", "removed", "kept", "healed", "findings", "errors")))


@dataclass
class _NodeState:
    """What this tracker last sent for one node, and what it saw there."""

    sent: ProviderTree
    generations: dict[str, int] = field(default_factory=dict)
    dirty: set[str] = field(default_factory=set)  # failed to sync: retry next run
    pending_removal: list[str] = field(default_factory=list)
    # The tree's provider generations the heal snapshot was taken at
    # (None: take one).
    heal_generations: dict[str, int] | None = None
    # consumer -> provider -> class -> amount, on this node's providers
    held: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)
    nodes_held: dict[str, int] = field(default_factory=dict)


def format_resources(resources: Mapping[str, int]) -> str:
    return ", ".join(f"{rc}={amount}" for rc, amount in sorted(resources.items()))


def log_allocations(consumer: str, allocations: t.Allocations, verb: str, reason: str,
                    names: Mapping[str, str] | None = None) -> None:
    """One INFO line per provider whose allocations of ``consumer`` changed
    (and one allocation history entry: ``claimed`` adds, any other verb removes)."""
    for provider, resources in allocations.items():
        name = (names or {}).get(provider, provider)
        LOG.info("%s allocations of consumer %s on provider %s (%s): %s; reason: %s",
                 verb, consumer, name, provider, format_resources(resources), reason)
    if verb == "claimed":
        history.note(consumer, {}, allocations, f"{verb}: {reason}")
    else:
        history.note(consumer, allocations, {}, f"{verb}: {reason}")


def validate_flavor(flavor: Flavor) -> None:
    """Refuse a flavor placement would refuse, before anything is written."""
    why = flavors.problem(flavor)
    if why is not None:
        raise InvalidFlavor(why)


# Above this many consumers, heal decisions read the host's records rather
# than name every consumer in a statement.
_FEW_CONSUMERS = 20


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
        self._retries = conf.placement.conflict_retries
        self._nodes: dict[str, _NodeState] = {}
        self._known_classes: set[str] = set()
        self._known_traits: set[str] = set()
        self._disabled = False
        self._root_of: dict[str, str] = {}
        self._reported: set[tuple[str, str]] = set()
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
        return InstanceSpec(
            uuid=instance.uuid, name=instance.name, node=node or instance.node or "",
            resources=dict(instance.flavor.resources), flavor_name=instance.flavor.name,
        )

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
            service = self.compute.heartbeat(self.host)
            # A disabled host says so on its nodes, as Nova's computes do,
            # so that placement queries can leave it out too.
            self._disabled = service.disabled
            self.driver.set_known_instances(self.known_instances())
            nodes = self.driver.get_available_nodes()
            reports = [self._update_node(nodename) for nodename in nodes]
            reports.extend(self._remove_vanished_nodes(nodes))
            return reports

    def _update_node(self, nodename: str) -> NodeReport:
        root = self.node_root_uuid(nodename)
        progress = _Progress()
        self.compute.record_compute_node(root, self.host, nodename, self.driver_name)
        tree = ProviderTree()
        tree.new_root(nodename, root)
        self.driver.update_provider_tree(tree, nodename)
        if self._disabled:
            tree.add_traits(root, os_traits.COMPUTE_STATUS_DISABLED)
        self._root_of.update({uuid: root for uuid in tree.uuids()})
        reported_root = _Reported.of(self.conf, tree)
        # The one read of a quiet run: every provider of the tree with its
        # generation (empty when the root is not in placement).
        listed = {p.uuid: p for p in self.backend.list_providers(t.ProviderQuery(in_tree=root))}
        generations = {uuid: p.generation for uuid, p in listed.items()}
        state = self._nodes.get(nodename) if root in generations else None
        placed = self._placed_root(state, root, generations)
        for uuid in tree.uuids():
            if uuid == root:
                held = placed.inventories if placed else {}
            else:
                held = _last_sent(state, uuid, generations)
            tree.update_inventory(uuid, reported_root.inventory(self.conf, uuid, held))

        if state is None:
            state = self._full_sync(tree, placed, listed, reported_root, progress)
        else:
            self._incremental_sync(state, tree, placed, generations, reported_root, progress)
        self._nodes[nodename] = state
        self._heal(state, tree, generations, progress)
        return progress.report(nodename, root)

    def _placed_root(self, state: _NodeState | None, root: str,
                     generations: Mapping[str, int]) -> t.ProviderInventories | None:
        """The root's inventory in placement: what this tracker last sent
        while the root's generation has not moved, else read."""
        if root not in generations:
            return None
        if (state is not None and root not in state.dirty
                and state.generations.get(root) == generations[root]):
            return t.ProviderInventories(generations[root], state.sent.data(root).inventory)
        try:
            return self.backend.get_inventories(root)
        except perrors.ProviderNotFound:
            return None

    def _full_sync(self, tree: ProviderTree, placed: t.ProviderInventories | None,
                   listed: Mapping[str, t.ResourceProvider], reported_root: _Reported,
                   progress: _Progress) -> _NodeState:
        """First run for a node (or its root vanished): check every provider."""
        existing = listed if placed is not None else {}
        state = _NodeState(sent=ProviderTree())
        vanished = [p for p in existing.values() if not tree.exists(p.uuid)]
        self._sync(state, tree, tree.uuids(), set(existing), placed, reported_root, progress)
        state.pending_removal = _children_first(vanished)
        self._remove_pending(state, progress)
        return state

    def _incremental_sync(self, state: _NodeState, tree: ProviderTree,
                          placed: t.ProviderInventories, generations: Mapping[str, int],
                          reported_root: _Reported, progress: _Progress) -> None:
        changed = tree.changed(state.sent)
        to_sync = {u for u in changed if tree.exists(u)} | state.dirty
        # Anyone's write (a claim, a heal, an operator) on a provider of the
        # tree moves its generation: check that provider again.
        to_sync |= {u for u in tree.uuids() if generations.get(u) != state.generations.get(u)}
        vanished = [u for u in changed if not tree.exists(u)]
        if to_sync:
            known = {u for u in state.sent.uuids()
                     if u not in state.dirty and u in generations}
            self._sync(state, tree, [u for u in tree.uuids() if u in to_sync], known,
                       placed, reported_root, progress)
        state.pending_removal = [u for u in state.pending_removal if not tree.exists(u)]
        state.pending_removal += [u for u in vanished if u not in state.pending_removal]
        self._remove_pending(state, progress)

    def _sync(self, state: _NodeState, tree: ProviderTree, uuids: Sequence[str],
              existing: set[str], placed: t.ProviderInventories | None,
              reported_root: _Reported, progress: _Progress) -> None:
        """Create missing providers (parents first) and update the
        inventory and traits of ``uuids``; a failure leaves the provider
        dirty for the next run instead of stopping the others."""
        root = tree.roots()[0].uuid
        for uuid in uuids:
            data = tree.data(uuid)
            try:
                # Refused here, a provider the backend would refuse is
                # neither created empty nor left half-written (inventory
                # set, traits refused).
                _check_provider(data)
                if uuid not in existing:
                    self._create_provider(data, progress)
                self._ensure_names(data)
                generation, changed = self._sync_provider(
                    data, placed if uuid == root else None, reported_root,
                    state.sent.data(uuid).aggregates if state.sent.exists(uuid) else set())
                state.generations[uuid] = generation
                state.dirty.discard(uuid)
                if changed:
                    progress.updated.append(data.name)
            except perrors.PlacementError as exc:
                LOG.warning("could not update provider %s (%s): %s", data.name, uuid, exc)
                state.dirty.add(uuid)
                state.generations.pop(uuid, None)
                progress.errors.append(f"{data.name}: {exc}")
        state.sent = tree.copy()

    def _create_provider(self, data: ProviderData, progress: _Progress) -> None:
        try:
            self.backend.create_provider(data.name, uuid=data.uuid, parent_uuid=data.parent_uuid)
        except perrors.DuplicateUUID:
            return  # created by an earlier run we do not remember
        LOG.info("created resource provider %s (%s) for host %s", data.name, data.uuid, self.host)
        progress.created.append(data.name)

    def _ensure_names(self, data: ProviderData) -> None:
        """Create the custom classes and traits a provider uses, once per
        process (standard names always exist)."""
        for rc in data.inventory:
            if orc.is_custom(rc) and rc not in self._known_classes:
                self.backend.ensure_resource_class(rc)
                self._known_classes.add(rc)
        for trait in data.traits:
            if os_traits.is_custom(trait) and trait not in self._known_traits:
                self.backend.ensure_trait(trait)
                self._known_traits.add(trait)

    def _sync_provider(self, data: ProviderData, placed: t.ProviderInventories | None,
                       reported: _Reported, sent_aggregates: set[str]) -> tuple[int, bool]:
        """Make one provider's inventory, traits and aggregates what
        ``data`` says.

        Ratios depend on what placement holds, so a lost race re-reads and
        re-applies them (``reported`` keeps the driver's raw inventories).
        Aggregates the driver reports are added; those it reported before
        and no longer does are removed; others (an operator's) are kept.
        Returns the provider generation and whether anything was written.
        """
        first_read = placed

        def attempt() -> tuple[int, bool]:
            nonlocal first_read
            current = first_read or self.backend.get_inventories(data.uuid)
            first_read = None
            data.inventory = reported.inventory(self.conf, data.uuid, current.inventories)
            generation, changed = current.generation, False
            if dict(current.inventories) != data.inventory:
                generation = self.backend.set_inventories(data.uuid, generation, data.inventory)
                LOG.info("set inventory of provider %s (%s): %s", data.name, data.uuid,
                         _format_inventory(data.inventory))
                changed = True
            traits = self.backend.get_provider_traits(data.uuid)
            generation = traits.generation
            if traits.traits != frozenset(data.traits):
                generation = self.backend.set_provider_traits(
                    data.uuid, traits.generation, frozenset(data.traits))
                LOG.info("set traits of provider %s (%s): %s", data.name, data.uuid,
                         ", ".join(sorted(data.traits)) or "none")
                changed = True
            if data.aggregates or sent_aggregates:
                held = self.backend.get_provider_aggregates(data.uuid)
                wanted = (held.aggregates - (sent_aggregates - data.aggregates)) | data.aggregates
                generation = held.generation
                if wanted != held.aggregates:
                    generation = self.backend.set_provider_aggregates(
                        data.uuid, held.generation, frozenset(wanted))
                    LOG.info("set aggregates of provider %s (%s): %s", data.name, data.uuid,
                             ", ".join(sorted(wanted)) or "none")
                    changed = True
            return generation, changed

        return retry.on_conflict(attempt, self._retries, f"update provider {data.name}",
                                 self.stats.conflict)

    def _remove_pending(self, state: _NodeState, progress: _Progress) -> None:
        """Delete vanished providers (children first) that nothing uses."""
        still = []
        for uuid in state.pending_removal:
            if self._remove_provider(uuid):
                progress.removed.append(uuid)
            else:
                still.append(uuid)
                progress.kept.append(uuid)
        state.pending_removal = still

    def _remove_provider(self, uuid: str) -> bool:
        try:
            in_use = self.backend.get_provider_allocations(uuid)
            if in_use:
                LOG.warning("provider %s is gone from host %s but %d consumer(s) hold "
                            "allocations on it (%s); keeping it", uuid, self.host,
                            len(in_use), ", ".join(sorted(in_use)))
                return False
            self.backend.delete_provider(uuid)
        except perrors.ProviderNotFound:
            return True
        except (perrors.ProviderInUse, perrors.CannotDeleteParent) as exc:
            LOG.warning("provider %s is gone from host %s but cannot be deleted: %s",
                        uuid, self.host, exc)
            return False
        LOG.info("deleted resource provider %s: host %s no longer reports it", uuid, self.host)
        return True

    def _remove_vanished_nodes(self, nodes: Iterable[str]) -> list[NodeReport]:
        """Nodes recorded for this host that the driver no longer reports."""
        reports = []
        for record in self.compute.list_compute_nodes(host=self.host):
            if record.nodename in nodes:
                continue
            progress = _Progress()
            providers = self.backend.list_providers(t.ProviderQuery(in_tree=record.uuid))
            state = _NodeState(sent=ProviderTree(), pending_removal=_children_first(providers))
            self._remove_pending(state, progress)
            if not state.pending_removal:
                self.compute.delete_compute_node(record.uuid)
                self._nodes.pop(record.nodename, None)
                LOG.info("node %s is gone from host %s; its record was removed",
                         record.nodename, self.host)
            reports.append(progress.report(record.nodename, record.uuid))
        return reports

    # -- heal ---------------------------------------------------------------
    def _heal(self, state: _NodeState, tree: ProviderTree, generations: Mapping[str, int],
              progress: _Progress) -> None:
        """Apply heal_rules.decide to every consumer on this node's providers.

        Allocations are re-read only when a generation of the tree moved
        (every allocation write bumps each provider it touches); the records
        are read from the compute store on every run, so a local delete is
        noticed. ``generations`` are those read at the start of the run; the
        ones this run's own writes produced replace them.
        """
        current = {**generations,
                   **{u: g for u, g in state.generations.items() if tree.exists(u)}}
        if state.heal_generations != current:
            self._snapshot(state, tree)
            state.heal_generations = current
        if not state.held:
            return
        ours = set(tree.uuids()) | set(state.pending_removal)
        for consumer, decision in self._decisions(list(state.held), state.nodes_held).items():
            if decision.action == heal_rules.REMOVE:
                if self._heal_remove(consumer, ours, decision.reason):
                    progress.healed.append(consumer)
                    state.heal_generations = None
            elif decision.finding:
                self._report(consumer, decision, progress)
            else:
                self._reported = {r for r in self._reported if r[0] != consumer}

    def _snapshot(self, state: _NodeState, tree: ProviderTree) -> None:
        held: dict[str, dict[str, dict[str, int]]] = {}
        for uuid in list(tree.uuids()) + state.pending_removal:
            try:
                for consumer, resources in self.backend.get_provider_allocations(uuid).items():
                    held.setdefault(consumer, {})[uuid] = dict(resources)
            except perrors.ProviderNotFound:
                continue
        # A consumer whose share of this node is what it was keeps its node
        # count: re-reading every consumer after each boot would cost one
        # read per instance of the host.
        unchanged = {consumer for consumer, mine in held.items()
                     if state.held.get(consumer) == mine and consumer in state.nodes_held}
        stale = [consumer for consumer in held if consumer not in unchanged]
        fresh = self.backend.get_consumers_allocations(stale) if stale else {}
        nodes_held = {
            consumer: state.nodes_held[consumer] if consumer in unchanged
            else self._nodes_of(fresh[consumer].allocations)
            for consumer in held
        }
        state.held, state.nodes_held = held, nodes_held

    def _nodes_of(self, allocations: t.Allocations) -> int:
        """How many compute nodes (root providers) ``allocations`` touch; a
        storage pool several nodes share is none of them."""
        return len({self._root_uuid(p) for p in allocations} - {_SHARED})

    def _root_uuid(self, provider: str) -> str:
        if provider not in self._root_of:
            try:
                found = self.backend.get_provider(provider)
                traits = self.backend.get_provider_traits(provider).traits
            except perrors.ProviderNotFound:
                return provider
            shared = sharing.SHARING_TRAIT in traits
            self._root_of[provider] = _SHARED if shared else found.root_uuid or provider
        return self._root_of[provider]

    def _decisions(self, consumers: list[str],
                   nodes_held: Mapping[str, int]) -> dict[str, heal_rules.HealDecision]:
        if len(consumers) > _FEW_CONSUMERS:
            # Every consumer of a node: the host's records, the few others
            # by uuid, and the unfinished migrations (few in any cloud),
            # rather than statements naming every consumer.
            wanted = set(consumers)
            instances = {i.uuid: i for i in self.compute.list_instances(host=self.host)
                         if i.uuid in wanted}
            rest = [c for c in consumers if c not in instances]
            if rest:
                instances.update((i.uuid, i) for i in self.compute.list_instances(uuids=rest))
            others = [c for c in consumers if c not in instances]
            migrations = {m.uuid: m for m in self.compute.list_migrations(uuids=others)} \
                if others else {}
            moving = {m.instance_uuid for m in self.compute.list_migrations(
                statuses=cv.UNFINISHED_MIGRATION_STATUSES) if m.instance_uuid in wanted}
        else:
            instances = {i.uuid: i for i in self.compute.list_instances(uuids=consumers)}
            migrations = {m.uuid: m for m in self.compute.list_migrations(uuids=consumers)}
            moving = {m.instance_uuid for m in self.compute.list_migrations(
                instance_uuids=consumers, statuses=cv.UNFINISHED_MIGRATION_STATUSES)}
        decisions = {}
        for consumer in consumers:
            instance = instances.get(consumer)
            in_move = instance is not None and (
                instance.task_state is not None or consumer in moving)
            decisions[consumer] = heal_rules.decide(
                self.host, instance, migrations.get(consumer), in_move,
                nodes_held.get(consumer, 1))
        return decisions

    def _heal_remove(self, consumer: str, ours: set[str], reason: str) -> bool:
        """Remove everything ``consumer`` holds, deciding again on fresh data
        (and again after a lost race)."""

        def attempt() -> bool:
            held = self.backend.get_consumer_allocations(consumer)
            if not any(p in ours for p in held.allocations):
                return False
            nodes = self._nodes_of(held.allocations)
            decision = self._decisions([consumer], {consumer: nodes})[consumer]
            if decision.action != heal_rules.REMOVE:
                return False
            self.backend.write_allocations([held.emptied()])
            log_allocations(consumer, held.allocations, "heal removed",
                            f"{decision.reason} (host {self.host})")
            return True

        return retry.on_conflict(attempt, self._retries, f"heal consumer {consumer}",
                                 self.stats.conflict)

    def _report(self, consumer: str, decision: heal_rules.HealDecision,
                progress: _Progress) -> None:
        """Warn and record an audit finding, once per consumer and kind."""
        progress.findings.append(f"{consumer}: {decision.finding}")
        key = (consumer, decision.finding)
        if key in self._reported:
            return
        self._reported.add(key)
        LOG.warning("heal on host %s leaves consumer %s alone: %s", self.host, consumer,
                    decision.reason)
        self.compute.add_audit_finding(consumer, self.host, decision.finding, decision.reason)

    # -- claims ---------------------------------------------------------------
    def boot(
        self,
        name: str,
        flavor: Flavor,
        *,
        project_id: str,
        user_id: str,
        node: str | None = None,
        uuid: str | None = None,
    ) -> Instance:
        """Record, claim, spawn: an ACTIVE instance on this host, or an error
        with nothing left behind (no capacity), or an ERROR instance holding
        nothing (failed spawn)."""
        validate_flavor(flavor)
        nodes = self._nodes_for(node)
        preconditions.check(self.conf, self.compute, preconditions.BOOT, None,
                            dest_host=self.host)
        with self._lock:
            instance = self.compute.create_instance(
                name, flavor, project_id=project_id, user_id=user_id, host=self.host,
                node=nodes[0], uuid=uuid)
            try:
                chosen = self._claim_on(nodes, instance, "boot")
            except Exception:
                self.compute.purge_instance(instance.uuid)
                raise
            if chosen != instance.node:
                instance = self.compute.update_instance(instance.uuid, node=chosen)
            self._spawn_or_release(instance, "boot", vm_state=cv.ERROR, keep_host=True)
            try:
                return self.compute.update_instance(
                    instance.uuid, expected_vm_state=cv.BUILDING, vm_state=cv.ACTIVE)
            except cerrors.StateConflict:
                # Deleted while it was being built: stop it and make sure
                # the claim goes too (the delete may have run before it).
                self.driver.destroy(self.instance_spec(instance))
                self.release([instance.uuid], "instance deleted while building")
                raise

    def delete(self, ref: str) -> Instance:
        """Delete an instance of this host (or of none) at any phase: the
        one delete of :func:`rtframework.moves.delete.delete` (guest
        destroyed, marked DELETED, everything it and its unfinished
        migrations hold removed, those migrations closed as ``error``)."""
        with self._lock:
            instance = self.compute.lookup_instance(ref)
            if instance.vm_state == cv.DELETED:
                raise InvalidInstanceState(f"instance {instance.uuid} is already deleted")
            self._check_owned(instance, allow_unowned=True)
            ctx = MoveContext(self.conf, self.backend, self.compute, {self.host: self.driver})
            try:
                return delete.delete(ctx, instance.uuid)
            except merrors.InstanceGone as exc:
                raise InvalidInstanceState(str(exc)) from exc

    def shelve_offload(self, ref: str) -> Instance:
        """Destroy an ACTIVE instance, release its claim, clear its host."""
        with self._lock:
            instance = self.compute.lookup_instance(ref)
            self._check_owned(instance)
            if instance.vm_state != cv.ACTIVE or instance.task_state is not None:
                raise InvalidInstanceState(
                    f"instance {instance.uuid} is {instance.vm_state} (task "
                    f"{instance.task_state}); only an ACTIVE idle instance can be shelved")
            preconditions.check(self.conf, self.compute, preconditions.SHELVE_OFFLOAD,
                                instance)
            self.compute.update_instance(
                instance.uuid, expected_vm_state=cv.ACTIVE, expected_task_state=None,
                expected_host=self.host, task_state="shelving_offloading")
            self.driver.destroy(self.instance_spec(instance))
            # The host is kept until the claim is gone, so that this host's
            # heal still owns the instance if we stop half-way.
            # Only if nobody deleted it meanwhile (a delete wins and releases).
            self.compute.update_instance(
                instance.uuid, expected_vm_state=cv.ACTIVE,
                expected_task_state="shelving_offloading", vm_state=cv.SHELVED_OFFLOADED,
                task_state=None)
            self.release([instance.uuid], "shelve offload")
            return self.compute.update_instance(
                instance.uuid, expected_vm_state=cv.SHELVED_OFFLOADED, host=None, node=None)

    def unshelve(self, ref: str, node: str | None = None) -> Instance:
        """Claim a SHELVED_OFFLOADED instance on this host again and spawn it."""
        with self._lock:
            instance = self.compute.lookup_instance(ref)
            if instance.vm_state != cv.SHELVED_OFFLOADED or instance.task_state is not None:
                raise InvalidInstanceState(
                    f"instance {instance.uuid} is {instance.vm_state} (task "
                    f"{instance.task_state}); only a SHELVED_OFFLOADED one can be unshelved")
            nodes = self._nodes_for(node)
            preconditions.check(self.conf, self.compute, preconditions.UNSHELVE, instance,
                                dest_host=self.host)
            shelved = instance
            try:
                instance = self.compute.update_instance(
                    instance.uuid, expected_vm_state=cv.SHELVED_OFFLOADED,
                    expected_task_state=None, expected_host=shelved.host, host=self.host,
                    node=nodes[0], task_state="unshelving")
            except cerrors.StateConflict as exc:
                raise InvalidInstanceState(str(exc)) from exc
            try:
                chosen = self._claim_on(nodes, instance, "unshelve")
            except Exception:
                self._back_to_shelved(shelved)
                raise
            instance = self.compute.update_instance(instance.uuid, node=chosen)
            self._spawn_or_release(instance, "unshelve", vm_state=cv.SHELVED_OFFLOADED,
                                   keep_host=False)
            return self.compute.update_instance(
                instance.uuid, expected_task_state="unshelving", vm_state=cv.ACTIVE,
                task_state=None)

    def claim(self, consumer: str, resources: Mapping[str, int], nodename: str, *,
              project_id: str, user_id: str, reason: str) -> t.Allocations:
        """Claim ``resources`` for a new consumer on one node's tree (child
        providers included); NoCapacity if it cannot hold them."""
        root = self.node_root_uuid(nodename)
        try:
            found = self.backend.get_allocation_candidates(
                claim_request.for_node(self.backend, root, resources))
        except perrors.ResourceClassNotFound:
            # No provider anywhere offers the class: say what this tree has.
            found = t.AllocationCandidates((), {})
        for request in found.allocation_requests:
            try:
                self.backend.put_allocations(
                    consumer, request.allocations, project_id=project_id, user_id=user_id,
                    consumer_generation=None)
            except perrors.CapacityExceeded:
                continue  # lost a race for this candidate; try the next
            except perrors.ConsumerGenerationConflict as exc:
                raise TrackerError(f"consumer {consumer} already holds allocations: {exc}") \
                    from exc
            log_allocations(consumer, request.allocations, "claimed", reason)
            return request.allocations
        raise NoCapacity(self._no_capacity_message(nodename, root, resources))

    def release(self, consumers: Sequence[str], reason: str) -> None:
        """Remove everything ``consumers`` hold in one atomic, consumer
        generation guarded write; a lost race re-reads."""

        def attempt() -> None:
            held = [self.backend.get_consumer_allocations(c) for c in consumers]
            held = [h for h in held if h.allocations]
            if held:
                self.backend.write_allocations([h.emptied() for h in held])
            for h in held:
                log_allocations(h.consumer_uuid, h.allocations, "removed", reason)

        retry.on_conflict(attempt, self._retries, f"release {', '.join(consumers)}",
                          self.stats.conflict)

    def _nodes_for(self, node: str | None) -> list[str]:
        nodes = self.driver.get_available_nodes()
        if node is None:
            return nodes
        if node not in nodes:
            raise UnknownNode(f"host {self.host} has no node {node!r}; it has "
                               f"{', '.join(nodes)}")
        return [node]

    def _claim_on(self, nodes: Sequence[str], instance: Instance, reason: str) -> str:
        """Claim the instance's flavor on the first node that holds it."""
        failures = []
        for nodename in nodes:
            try:
                self.claim(instance.uuid, instance.flavor.resources, nodename,
                           project_id=instance.project_id, user_id=instance.user_id,
                           reason=f"{reason} of {instance.name} on host {self.host}")
                return nodename
            except NoCapacity as exc:
                failures.append(str(exc))
        raise NoCapacity("; ".join(failures))

    def _spawn_or_release(self, instance: Instance, reason: str, vm_state: str,
                          keep_host: bool) -> None:
        try:
            self.driver.spawn(self.instance_spec(instance))
        except DriverError as exc:
            self.release([instance.uuid], f"failed {reason}")
            fields = {} if keep_host else {"host": None, "node": None}
            self.compute.update_instance(instance.uuid, vm_state=vm_state, task_state=None,
                                         **fields)
            raise BootFailed(f"{reason} of instance {instance.uuid} ({instance.name}) on "
                             f"{self.host}/{instance.node} failed: {exc}; its claim was "
                             "removed") from exc

    def _back_to_shelved(self, shelved: Instance) -> None:
        """Undo the unshelve's take: the record as it was before, host
        included. A shelve offload that stopped before its release leaves
        the host set and a claim behind; clearing the host would make
        that claim nobody's, and no heal could remove it."""
        self.compute.update_instance(
            shelved.uuid, expected_vm_state=cv.SHELVED_OFFLOADED,
            expected_task_state="unshelving", expected_host=self.host,
            host=shelved.host, node=shelved.node, task_state=None)

    def _check_owned(self, instance: Instance, allow_unowned: bool = False) -> None:
        if instance.host == self.host or (allow_unowned and instance.host is None):
            return
        raise NotOwned(f"instance {instance.uuid} ({instance.name}) is on host "
                       f"{instance.host}, not {self.host}")

    def _no_capacity_message(self, nodename: str, root: str,
                             resources: Mapping[str, int]) -> str:
        try:
            why = room.explain(self.backend, root, resources)
        except perrors.ProviderNotFound:
            return (f"node {nodename} of host {self.host} is not in placement yet; run "
                    "'rtf compute update' on that host first")
        return (f"node {nodename} of host {self.host} cannot hold {format_resources(resources)}"
                f" ({why})")

@dataclass(frozen=True)
class _Reported:
    """What the driver reported for each provider of one node (raw) and
    each provider's share of the host's reservation."""

    raw: Mapping[str, Mapping[str, t.Inventory]]
    reserved: Mapping[str, Mapping[str, int]]

    @classmethod
    def of(cls, conf: cfg.ConfigOpts, tree: ProviderTree) -> _Reported:
        raw = {p.uuid: dict(p.inventory) for p in tree}
        return cls(raw, accounting.reservations(conf, raw.items()))

    def inventory(self, conf: cfg.ConfigOpts, uuid: str,
                  placed: Mapping[str, t.Inventory]) -> dict[str, t.Inventory]:
        return accounting.provider_inventory(conf, self.raw[uuid], placed,
                                             self.reserved.get(uuid, {}))


def _last_sent(state: _NodeState | None, uuid: str,
               generations: Mapping[str, int]) -> Mapping[str, t.Inventory]:
    """A provider's inventory in placement as far as this tracker knows
    without reading: what it sent, while the generation has not moved."""
    if (state is None or uuid in state.dirty or not state.sent.exists(uuid)
            or state.generations.get(uuid) != generations.get(uuid)):
        return {}
    return state.sent.data(uuid).inventory


def _check_provider(data: ProviderData) -> None:
    """The backend contract's checks of everything one provider update writes."""
    validation.check_provider_name(data.name)
    validation.check_inventories(f"{data.uuid} ({data.name})", data.inventory)
    validation.trait_set(data.traits)


def _children_first(providers: Iterable[t.ResourceProvider]) -> list[str]:
    by_uuid = {p.uuid: p for p in providers}

    def depth(p: t.ResourceProvider) -> int:
        d = 0
        while p.parent_uuid in by_uuid:
            p, d = by_uuid[p.parent_uuid], d + 1
        return d

    return [p.uuid for p in sorted(by_uuid.values(), key=depth, reverse=True)]


def _format_inventory(inventory: Mapping[str, t.Inventory]) -> str:
    return "; ".join(
        f"{rc} total={inv.total} reserved={inv.reserved} ratio={inv.allocation_ratio}"
        for rc, inv in sorted(inventory.items()))
