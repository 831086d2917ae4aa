"""Heal: the allocations on one node's providers that nobody should hold.

After each sync of a node, every consumer holding allocations on the
node's providers is judged by :func:`rtframework.heal_rules.decide` from
its instance and migration records: what the rules say to remove is
removed (deciding again on fresh data first), what they only report is
logged once and recorded as an audit finding.

Allocations are re-read only when a generation of the tree moved (a
claim of a child's class moves only the child's generation); the records
are read on every run, so a local delete is noticed. The snapshot can
therefore be behind: a write may leave alone a provider the consumer only
moves off (Placement does), so it may still list a consumer that left;
and a consumer whose share here did not change keeps the node count read
before. Every removal and finding is decided again on the consumer's
allocations read for it, so neither acts on stale data; but a consumer
that comes to hold a second node while its share here stays the same
keeps the node count read before, so it is not reported until that count
is read anew (its share here changes, or the node's state is new: `rtf
compute update`, an agent restart); `rtf check` reports it
(multi_host_allocation) at once.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

from oslo_config import cfg

from rtframework import heal_rules, retry, sharing
from rtframework.compute import values as cv
from rtframework.compute.store import ComputeStore
from rtframework.compute.values import HostRecords, Instance, InstanceState
from rtframework.placement import errors as perrors
from rtframework.placement import types as t
from rtframework.placement.counting import CountingBackend
from rtframework.provider_tree import ProviderTree
from rtframework.tracker.allocation_log import log_allocations
from rtframework.tracker.provider_sync import NodeState, Progress

LOG = logging.getLogger(__name__)

# What _root_uuid answers for a sharing provider (a pool is no node).
_SHARED = ""
# Above this many consumers, heal decisions read the host's records rather
# than name every consumer in a statement.
_FEW_CONSUMERS = 20


@dataclass
class HealState:
    """What the heal saw on one node's providers."""

    # The tree's provider generations the snapshot was taken at (None: take one).
    generations: dict[str, int] | None = None
    # consumer -> provider -> class -> amount, on this node's providers
    held: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)
    # consumer -> how many compute nodes it holds allocations on
    nodes_held: dict[str, int] = field(default_factory=dict)


class Healer:
    """Heals the allocations on ``host``'s providers."""

    def __init__(self, conf: cfg.ConfigOpts, host: str, backend: CountingBackend,
                 compute_store: ComputeStore) -> None:
        self.host = host
        self.backend = backend
        self.compute = compute_store
        self.stats = backend.stats
        self.retries = conf.placement.conflict_retries
        self._root_of: dict[str, str] = {}
        self._reported: set[tuple[str, str]] = set()

    def learn_tree(self, root: str, tree: ProviderTree) -> None:
        """Every provider of ``tree`` is part of the compute node ``root``."""
        self._root_of.update({uuid: root for uuid in tree.uuids()})

    def heal(self, state: HealState, tree: ProviderTree, synced: NodeState,
             generations: Mapping[str, int], progress: Progress,
             records: HostRecords | None = None) -> None:
        """Apply heal_rules.decide to every consumer on this node's providers.

        Allocations are re-read only when a generation of the tree moved
        (see the module's docstring); the records are read from the compute
        store on every run, so a local delete is noticed. ``generations``
        are those read at the start of the run; the ones this run's own
        writes produced replace them. ``records``: the host's records as the
        run read them (else they are read here); a removal or a finding is
        always decided again on the consumer's allocations and records read
        for it (one more placement read in a pass with findings).
        """
        current = {**generations,
                   **{u: g for u, g in synced.generations.items() if tree.exists(u)}}
        if state.generations != current:
            self._snapshot(state, tree, synced.pending_removal)
            state.generations = current
        if not state.held:
            return
        ours = set(tree.uuids()) | set(synced.pending_removal)
        decisions = self._decisions(list(state.held), state.nodes_held, records)
        findings = [c for c, d in decisions.items() if d.finding]
        again = self._findings_again(state, findings, ours) if findings else {}
        for consumer, decision in decisions.items():
            if decision.action == heal_rules.REMOVE:
                if self._heal_remove(consumer, ours, decision.reason):
                    progress.healed.append(consumer)
                    state.generations = None
                continue
            if consumer in again:
                decision = again[consumer]
            if decision is not None and decision.finding:
                self._report(consumer, decision, progress)
            else:
                self._reported = {r for r in self._reported if r[0] != consumer}

    def _findings_again(self, state: HealState, findings: list[str], ours: set[str]
                        ) -> dict[str, heal_rules.HealDecision | None]:
        """The consumers of ``findings`` decided again on their allocations
        and records read now, all at once (one placement read, one set of
        record reads); None, and it leaves the snapshot, for a consumer
        that holds nothing here any more. The snapshot's node counts become
        the ones read now.

        The pass's records were read before this node's sync (a move begun
        since looks like a finding); the snapshot's node counts and list of
        consumers can be behind (see the module's docstring).
        """
        fresh = self.backend.get_consumers_allocations(findings)
        nodes: dict[str, int] = {}
        for consumer in findings:
            held = fresh[consumer].allocations
            if any(p in ours for p in held):
                nodes[consumer] = state.nodes_held[consumer] = self._nodes_of(held)
            else:
                state.held.pop(consumer, None)
                state.nodes_held.pop(consumer, None)
        decided = self._decisions(list(nodes), nodes) if nodes else {}
        return {consumer: decided.get(consumer) for consumer in findings}

    def _fresh_decision(self, consumer: str, held: t.Allocations, ours: set[str]
                        ) -> tuple[int, heal_rules.HealDecision] | None:
        """The node count of ``held`` (what ``consumer`` holds now) and the
        decision on records read now; None if it holds nothing here."""
        if not any(p in ours for p in held):
            return None
        nodes = self._nodes_of(held)
        return nodes, self._decisions([consumer], {consumer: nodes})[consumer]

    def _snapshot(self, state: HealState, tree: ProviderTree,
                  pending_removal: list[str]) -> None:
        held: dict[str, dict[str, dict[str, int]]] = {}
        for uuid in list(tree.uuids()) + pending_removal:
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

    def _decisions(self, consumers: list[str], nodes_held: Mapping[str, int],
                   records: HostRecords | None = None
                   ) -> dict[str, heal_rules.HealDecision]:
        instances: dict[str, Instance | InstanceState]
        if records is not None or len(consumers) > _FEW_CONSUMERS:
            # The host's records (as the run read them, else read now), the
            # few other consumers by uuid, and the unfinished migrations
            # (few in any cloud), rather than statements naming every consumer.
            wanted = set(consumers)
            on_host: Mapping[str, Instance | InstanceState] = records.instances \
                if records is not None \
                else {i.uuid: i for i in self.compute.list_instances(host=self.host)}
            instances = {u: on_host[u] for u in consumers if u in on_host}
            rest = [c for c in consumers if c not in instances]
            if rest:
                instances.update((i.uuid, i) for i in self.compute.list_instances(uuids=rest))
            others = [c for c in consumers if c not in instances]
            migrations = {m.uuid: m for m in self.compute.list_migrations(uuids=others)} \
                if others else {}
            unfinished = records.unfinished_migrations if records is not None \
                else self.compute.list_migrations(statuses=cv.UNFINISHED_MIGRATION_STATUSES)
            moving = {m.instance_uuid for m in unfinished if m.instance_uuid in wanted}
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
            found = self._fresh_decision(consumer, held.allocations, ours)
            if found is None or found[1].action != heal_rules.REMOVE:
                return False
            decision = found[1]
            self.backend.write_allocations([held.emptied()])
            log_allocations(consumer, held.allocations, "heal removed",
                            f"{decision.reason} (host {self.host})")
            return True

        return retry.on_conflict(attempt, self.retries, f"heal consumer {consumer}",
                                 self.stats.conflict)

    def _report(self, consumer: str, decision: heal_rules.HealDecision,
                progress: Progress) -> None:
        """Warn and record an audit finding, once per consumer and kind."""
        progress.findings.append(f"{consumer}: {decision.finding}")
        key = (consumer, decision.finding)
        if key in self._reported:
            return
        self._reported.add(key)
        LOG.warning("heal on host %s leaves consumer %s alone: %s", self.host, consumer,
                    decision.reason)
        self.compute.add_audit_finding(consumer, self.host, decision.finding, decision.reason)
