"""How a move holds resources on both hosts: the two claim strategies.

``[placement] move_claim_strategy`` chooses one:

* ``doubled``: the instance consumer I holds both sides,
  I:{S: f_old, D: f_new} (summed per class on a same-host resize).
* ``migration``: the source side moves to a consumer named by the
  migration uuid, M:{S: f_old}, and I claims the destination, I:{D: f_new}.

A storage pool (sharing provider) both sides use is held once, by I, at
the larger amount of each class: the disk does not move. Confirm brings it
to the destination's amount, revert to the source's.

Every transition is one atomic multi-consumer ``write_allocations`` that
names the consumer generations it read. On a generation conflict the whole
step re-reads and decides again (``rtframework.retry.on_conflict``), so a
step that lost a race to a delete never re-creates what was deleted, and
a confirm that lost a race never leaves the migration consumer behind.

Each step first recognises which state of the move placement is in and
does nothing when the step is already done: confirming twice is harmless,
and reverting a confirmed move is an AlreadyConfirmed error that changes
nothing.
"""

from __future__ import annotations

import abc
import logging
from collections.abc import Mapping
from dataclasses import dataclass

from oslo_config import cfg

from rtframework import history, retry
from rtframework.moves import errors
from rtframework.placement import types as t
from rtframework.placement.backend import PlacementBackend

LOG = logging.getLogger(__name__)

INSTANCE = "INSTANCE"
MIGRATION = "MIGRATION"

# provider uuid -> resource class -> amount, without zero amounts
Alloc = dict[str, dict[str, int]]


def normalized(allocations: t.Allocations) -> Alloc:
    """A plain copy without zero amounts or empty providers, for comparing."""
    out: Alloc = {}
    for provider, resources in allocations.items():
        kept = {rc: int(n) for rc, n in resources.items() if n}
        if kept:
            out[provider] = kept
    return out


def summed(*parts: t.Allocations) -> Alloc:
    """Allocations added provider by provider and class by class."""
    out: Alloc = {}
    for part in parts:
        for provider, resources in part.items():
            slot = out.setdefault(provider, {})
            for rc, amount in resources.items():
                slot[rc] = slot.get(rc, 0) + int(amount)
    return normalized(out)


def on_root(root_uuid: str, flavor: Mapping[str, int]) -> Alloc:
    """A flavor's resources, all on one root provider."""
    return normalized({root_uuid: dict(flavor)})


@dataclass(frozen=True)
class MoveClaim:
    """What a claim strategy needs to know about one move.

    ``source`` is what the instance held before the move (f_old on the
    source tree) and ``dest`` what it holds on the destination afterwards
    (f_new; for an evacuation the same flavor). For a same-host resize both
    name the same providers.
    """

    instance_uuid: str
    migration_uuid: str
    project_id: str
    user_id: str
    source: t.Allocations
    dest: t.Allocations
    # Sharing providers (storage pools) both halves use: the disk does not
    # move, so while the move runs each is held once, at the larger amount
    # of each class, by the instance.
    shared: frozenset[str] = frozenset()

    @property
    def during(self) -> Alloc:
        """Both halves: summed, except on shared providers (held once)."""
        out = summed({p: r for p, r in self.source.items() if p not in self.shared},
                     {p: r for p, r in self.dest.items() if p not in self.shared})
        return {**out, **self._shared_held}

    @property
    def _shared_held(self) -> Alloc:
        held: Alloc = {}
        for provider in self.shared:
            old, new = self.source.get(provider, {}), self.dest.get(provider, {})
            held[provider] = {rc: max(old.get(rc, 0), new.get(rc, 0))
                              for rc in set(old) | set(new)}
        return normalized(held)

    @property
    def source_unshared(self) -> Alloc:
        """The source half without the shared providers (what a migration
        consumer holds)."""
        return normalized({p: r for p, r in self.source.items() if p not in self.shared})

    @property
    def dest_during(self) -> Alloc:
        """The destination half as the instance holds it while the move runs."""
        return normalized({**self.dest, **self._shared_held})

    def with_source_shared(self, source_unshared: t.Allocations) -> Alloc:
        """``source_unshared`` with the source's amounts on the shared providers."""
        return summed(source_unshared,
                      {p: r for p, r in self.source.items() if p in self.shared})


@dataclass(frozen=True)
class _Held:
    """What the two consumers of a move hold right now, and at which generations."""

    instance: t.ConsumerAllocations
    migration: t.ConsumerAllocations

    @property
    def instance_holds(self) -> Alloc:
        return normalized(self.instance.allocations)

    @property
    def migration_holds(self) -> Alloc:
        return normalized(self.migration.allocations)


class ClaimStrategy(abc.ABC):
    """One way of holding a move's double claim; every step is idempotent."""

    name: str

    def __init__(self, backend: PlacementBackend, retries: int = 10) -> None:
        self.backend = backend
        self.retries = retries

    # -- the steps ---------------------------------------------------------
    def start(self, move: MoveClaim, reason: str = "move start") -> None:
        """Hold both sides (raises CapacityExceeded if the destination is full)."""
        self._step(move, reason, self._decide_start)

    def confirm(self, move: MoveClaim, reason: str = "move confirm") -> None:
        """Keep the destination only."""
        self._step(move, reason, self._decide_confirm)

    def revert(self, move: MoveClaim, reason: str = "move revert") -> None:
        """Keep the source only; never re-creates a deleted instance's claim."""
        self._step(move, reason, self._decide_revert)

    def drop_instance(self, move: MoveClaim, reason: str = "instance deleted mid-move") -> None:
        """Remove everything the instance and the migration consumer hold."""
        self._step(move, reason, _decide_drop)

    @abc.abstractmethod
    def holding(self, move: MoveClaim) -> dict[str, Alloc]:
        """consumer uuid -> what it holds while the move runs (for audits)."""

    # -- what each strategy decides -----------------------------------------
    @abc.abstractmethod
    def _decide_start(self, move: MoveClaim, held: _Held) -> dict[str, Alloc]: ...

    @abc.abstractmethod
    def _decide_confirm(self, move: MoveClaim, held: _Held) -> dict[str, Alloc]: ...

    @abc.abstractmethod
    def _decide_revert(self, move: MoveClaim, held: _Held) -> dict[str, Alloc]: ...

    # -- machinery -----------------------------------------------------------
    def _step(self, move: MoveClaim, reason: str, decide) -> None:
        def attempt() -> None:
            held = _Held(
                self.backend.get_consumer_allocations(move.instance_uuid),
                self.backend.get_consumer_allocations(move.migration_uuid),
            )
            wanted = decide(move, held)
            self._write(move, held, wanted, reason)

        retry.on_conflict(
            attempt, self.retries,
            f"{reason} of instance {move.instance_uuid} (migration {move.migration_uuid})",
        )

    def _write(self, move: MoveClaim, held: _Held, wanted: dict[str, Alloc], reason: str) -> None:
        """Write the consumers whose allocations change, in one request."""
        current = {move.instance_uuid: held.instance, move.migration_uuid: held.migration}
        writes = []
        for consumer, allocations in wanted.items():
            before = current[consumer]
            if normalized(before.allocations) == allocations:
                continue
            if not allocations and before.generation is None:
                continue
            writes.append(t.AllocationWrite(
                consumer_uuid=consumer,
                allocations=allocations,
                project_id=before.project_id or move.project_id,
                user_id=before.user_id or move.user_id,
                consumer_generation=before.generation,
                consumer_type=INSTANCE if consumer == move.instance_uuid else MIGRATION,
            ))
        if not writes:
            LOG.debug("%s of instance %s: nothing to change", reason, move.instance_uuid)
            return
        self.backend.write_allocations(writes)
        for write in writes:
            log_change(write.consumer_uuid, current[write.consumer_uuid].allocations,
                        write.allocations, reason)


def log_change(consumer: str, before: t.Allocations, after: t.Allocations, reason: str) -> None:
    old, new = normalized(before), normalized(after)
    for provider in sorted(set(old) | set(new)):
        if old.get(provider) != new.get(provider):
            LOG.info("allocation of consumer %s on provider %s: %s -> %s (%s)",
                     consumer, provider, old.get(provider, {}), new.get(provider, {}), reason)
    history.note(consumer, old, new, reason)


def _decide_drop(move: MoveClaim, held: _Held) -> dict[str, Alloc]:
    return {move.instance_uuid: {}, move.migration_uuid: {}}


def _unexpected(move: MoveClaim, step: str, held: _Held) -> errors.UnexpectedAllocations:
    return errors.UnexpectedAllocations(
        f"cannot {step} the move of instance {move.instance_uuid} "
        f"(migration {move.migration_uuid}): instance holds {held.instance_holds}, migration "
        f"consumer holds {held.migration_holds}; expected source {normalized(move.source)} and "
        f"destination {normalized(move.dest)}"
    )


# A confirm finding the move reverted, and a revert finding it confirmed:
# the error, what the move became, and the half the instance holds.
_OTHER_WAY = {
    "confirm": (errors.AlreadyReverted, "reverted", "source"),
    "revert": (errors.AlreadyConfirmed, "confirmed", "destination"),
}


def _ended_the_other_way(move: MoveClaim, step: str, held: _Held) -> errors.MoveError:
    error, ended, half = _OTHER_WAY[step]
    return error(f"migration {move.migration_uuid} was {ended}: instance "
                 f"{move.instance_uuid} holds only its {half} {held.instance_holds}")


class DoubledClaim(ClaimStrategy):
    """I:{S: f_old, D: f_new} while the move runs."""

    name = "doubled"

    def holding(self, move):
        return {move.instance_uuid: move.during, move.migration_uuid: {}}

    def _decide_start(self, move, held):
        if held.instance_holds == move.during:
            return {}
        if not held.instance_holds:
            raise errors.InstanceGone(
                f"instance {move.instance_uuid} holds no allocations; nothing to move")
        if held.instance_holds != normalized(move.source):
            raise _unexpected(move, "start", held)
        return {move.instance_uuid: move.during}

    def _decide_confirm(self, move, held):
        return self._keep(move, held, "confirm", keep=move.dest, other=move.source)

    def _decide_revert(self, move, held):
        return self._keep(move, held, "revert", keep=move.source, other=move.dest)

    @staticmethod
    def _keep(move: MoveClaim, held: _Held, step: str, *, keep: t.Allocations,
              other: t.Allocations) -> dict[str, Alloc]:
        """Confirm or revert: I keeps one half; holding only the other one
        means the move ended the other way."""
        if held.instance_holds == move.during:
            return {move.instance_uuid: normalized(keep), move.migration_uuid: {}}
        if not held.instance_holds or held.instance_holds == normalized(keep):
            return {move.migration_uuid: {}}
        if held.instance_holds == normalized(other):
            raise _ended_the_other_way(move, step, held)
        raise _unexpected(move, step, held)


class MigrationClaim(ClaimStrategy):
    """M:{S: f_old}, I:{D: f_new} while the move runs."""

    name = "migration"

    def holding(self, move):
        return {move.instance_uuid: move.dest_during,
                move.migration_uuid: move.source_unshared}

    def _decide_start(self, move, held):
        if {move.instance_uuid: held.instance_holds,
                move.migration_uuid: held.migration_holds} == self.holding(move):
            return {}
        if not held.instance_holds:
            raise errors.InstanceGone(
                f"instance {move.instance_uuid} holds no allocations; nothing to move")
        if held.migration_holds or held.instance_holds != normalized(move.source):
            raise _unexpected(move, "start", held)
        return self.holding(move)

    def _decide_confirm(self, move, held):
        if held.migration_holds:
            # Whatever I holds is the destination now (or nothing, if the
            # instance went away): the source half only has to go, and a
            # shared pool comes down to the destination's amount.
            if held.instance_holds and move.shared and held.instance_holds == move.dest_during:
                return {move.migration_uuid: {}, move.instance_uuid: normalized(move.dest)}
            return {move.migration_uuid: {}}
        if (held.instance_holds and held.instance_holds == normalized(move.source)
                and held.instance_holds != normalized(move.dest)):
            raise _ended_the_other_way(move, "confirm", held)
        return {}

    def _decide_revert(self, move, held):
        if held.migration_holds:
            if not held.instance_holds:
                # The instance was deleted mid-move: drop M, never bring I back.
                return {move.migration_uuid: {}}
            # M holds what the instance had on the source (but the shared
            # pools, which I kept): hand it back.
            return {move.instance_uuid: move.with_source_shared(held.migration_holds),
                    move.migration_uuid: {}}
        if (held.instance_holds and held.instance_holds == normalized(move.dest)
                and held.instance_holds != normalized(move.source)):
            raise _ended_the_other_way(move, "revert", held)
        return {}


STRATEGIES: dict[str, type[ClaimStrategy]] = {
    DoubledClaim.name: DoubledClaim,
    MigrationClaim.name: MigrationClaim,
}


def strategy(name: str, backend: PlacementBackend, conf: cfg.ConfigOpts) -> ClaimStrategy:
    """The strategy named ``name`` (a migration record keeps the one it began with)."""
    try:
        cls = STRATEGIES[name]
    except KeyError:
        raise errors.MoveError(
            f"unknown move claim strategy {name!r}; known: {', '.join(sorted(STRATEGIES))}"
        ) from None
    return cls(backend, retries=conf.placement.conflict_retries)


def configured(backend: PlacementBackend, conf: cfg.ConfigOpts) -> ClaimStrategy:
    """The strategy of ``[placement] move_claim_strategy``, for new moves."""
    return strategy(conf.placement.move_claim_strategy, backend, conf)
