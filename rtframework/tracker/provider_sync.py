"""Provider-tree sync: what one host reports to placement (Nova's report
client).

Each periodic run hands :meth:`ProviderSync.sync_node` the tree the driver
filled in for a node; the sync applies the framework's reserved host
resources and allocation ratios (read back from what placement holds:
:mod:`rtframework.accounting`) and creates, updates and removes providers
until placement says what the tree says.

A run with nothing changed writes nothing and reads one thing per node:
the generation of every provider of the node's tree (one listing), which
says whether anyone (an operator, a claim, a heal) touched any of them
since the last run. A provider is re-checked when the driver reports it
differently or its generation moved. A provider that fails to sync stays
dirty for the next run; one the driver no longer reports is removed once
nothing holds allocations on it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import os_resource_classes as orc
import os_traits
from oslo_config import cfg

from rtframework import accounting, retry
from rtframework.compute.store import ComputeStore
from rtframework.compute.values import ComputeNode
from rtframework.placement import errors as perrors
from rtframework.placement import types as t
from rtframework.placement import validation
from rtframework.placement.counting import CountingBackend
from rtframework.provider_tree import ProviderData, ProviderTree

LOG = logging.getLogger(__name__)


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
class Progress:
    """What one periodic run did so far for one node."""

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
class NodeState:
    """What the sync last sent for one node, and what it saw there."""

    sent: ProviderTree
    generations: dict[str, int] = field(default_factory=dict)
    dirty: set[str] = field(default_factory=set)  # failed to sync: retry next run
    pending_removal: list[str] = field(default_factory=list)


class ProviderSync:
    """Keeps placement in line with what ``host``'s driver reports."""

    def __init__(self, conf: cfg.ConfigOpts, host: str, backend: CountingBackend,
                 compute_store: ComputeStore) -> None:
        self.conf = conf
        self.host = host
        self.backend = backend
        self.compute = compute_store
        self.stats = backend.stats
        self.retries = conf.placement.conflict_retries
        self._known_classes: set[str] = set()
        self._known_traits: set[str] = set()

    def sync_node(self, previous: NodeState | None, root: str, tree: ProviderTree,
                  progress: Progress) -> tuple[NodeState, dict[str, int]]:
        """Bring placement in line with ``tree`` (the driver's report of
        one node, its inventories raw); ``tree`` gets the inventories
        placement is to hold. Returns the node's state (``previous``
        unless the root is new to placement) and the provider generations
        read at the start."""
        reported_root = _Reported.of(self.conf, tree)
        # The one read of a quiet run: every provider of the tree with its
        # generation (empty when the root is not in placement).
        listed = {p.uuid: p for p in self.backend.list_providers(t.ProviderQuery(in_tree=root))}
        generations = {uuid: p.generation for uuid, p in listed.items()}
        state = previous if root in generations else None
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
        return state, generations

    def _placed_root(self, state: NodeState | None, root: str,
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
                   progress: Progress) -> NodeState:
        """First run for a node (or its root vanished): check every provider."""
        existing = listed if placed is not None else {}
        state = NodeState(sent=ProviderTree())
        vanished = [p for p in existing.values() if not tree.exists(p.uuid)]
        self._sync(state, tree, tree.uuids(), set(existing), placed, reported_root, progress)
        state.pending_removal = _children_first(vanished)
        self._remove_pending(state, progress)
        return state

    def _incremental_sync(self, state: NodeState, tree: ProviderTree,
                          placed: t.ProviderInventories, generations: Mapping[str, int],
                          reported_root: _Reported, progress: Progress) -> None:
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

    def _sync(self, state: NodeState, tree: ProviderTree, uuids: Sequence[str],
              existing: set[str], placed: t.ProviderInventories | None,
              reported_root: _Reported, progress: Progress) -> None:
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

    def _create_provider(self, data: ProviderData, progress: Progress) -> None:
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

        return retry.on_conflict(attempt, self.retries, f"update provider {data.name}",
                                 self.stats.conflict)

    def _remove_pending(self, state: NodeState, progress: Progress) -> None:
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

    def remove_vanished_nodes(self, nodes: Iterable[str],
                              recorded: Iterable[ComputeNode] | None = None
                              ) -> tuple[list[NodeReport], list[str]]:
        """Nodes recorded for this host (``recorded``, else read now) that
        the driver no longer reports: their reports, and the names of those
        now removed for good."""
        reports, gone = [], []
        if recorded is None:
            recorded = self.compute.list_compute_nodes(host=self.host)
        for record in recorded:
            if record.nodename in nodes:
                continue
            progress = Progress()
            providers = self.backend.list_providers(t.ProviderQuery(in_tree=record.uuid))
            state = NodeState(sent=ProviderTree(), pending_removal=_children_first(providers))
            self._remove_pending(state, progress)
            if not state.pending_removal:
                self.compute.delete_compute_node(record.uuid)
                gone.append(record.nodename)
                LOG.info("node %s is gone from host %s; its record was removed",
                         record.nodename, self.host)
            reports.append(progress.report(record.nodename, record.uuid))
        return reports, gone


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


def _last_sent(state: NodeState | None, uuid: str,
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
