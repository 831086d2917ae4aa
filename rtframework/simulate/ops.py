"""The operations of a soak: choosing the next one, and running it on a host.

Choosing depends only on the random generator and the compute records
the driver loop reads after the previous operation finished, so a seed
repeats the same operations in the same order (in thread mode, where
nothing else changes the records meanwhile).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import sqlalchemy as sa

from rtframework import scheduler
from rtframework.compute import errors as cerrors
from rtframework.compute import values as v
from rtframework.moves import errors as merrors
from rtframework.moves import evacuate, live, migrate, resize
from rtframework.moves.context import MoveContext
from rtframework.placement import errors as perrors
from rtframework.tracker import ResourceTracker, TrackerError

LOG = logging.getLogger(__name__)

FLAVORS = (
    v.Flavor("tiny", {"VCPU": 1, "MEMORY_MB": 512, "DISK_GB": 5}),
    v.Flavor("small", {"VCPU": 2, "MEMORY_MB": 1024, "DISK_GB": 10}),
    v.Flavor("medium", {"VCPU": 4, "MEMORY_MB": 2048, "DISK_GB": 20}),
)
PROJECT, USER = "soak", "soak"

BOOT, DELETE, MIGRATE, RESIZE = "boot", "delete", "migrate", "resize"
SAME_HOST_RESIZE, LIVE, LIVE_FAIL = "same-host resize", "live migrate", "failed live migrate"
EVACUATE, CONFIRM, REVERT = "evacuate", "confirm", "revert"
SHELVE, UNSHELVE, DELETE_MID_MOVE = "shelve offload", "unshelve", "delete mid-move"
# Evacuating an instance of a host that stopped reporting for longer than
# service_down_time (chosen by rtframework.simulate.outages, never at random).
OUTAGE_EVACUATE = "evacuate (host outage)"

KINDS = (BOOT, DELETE, MIGRATE, RESIZE, SAME_HOST_RESIZE, LIVE, LIVE_FAIL, EVACUATE,
         CONFIRM, REVERT, SHELVE, UNSHELVE, DELETE_MID_MOVE, OUTAGE_EVACUATE)

# Operations whose host may be killed while they run: all of them. The
# restarted host's startup recovery finishes or undoes each
# (rtframework.instance_recovery, rtframework.moves.recovery).
KILLABLE = frozenset(KINDS)

# Errors that mean the database connection dropped under the operation
# (not that it was refused): the host settles the operation's instance.
FAULTS = (sa.exc.OperationalError, sa.exc.InterfaceError, perrors.BackendUnavailable)

# Errors an operation may meet in a busy cloud; anything else is a bug.
EXPECTED = (TrackerError, merrors.MoveError, scheduler.NoValidHost, cerrors.ComputeError,
            perrors.PlacementError, sa.exc.OperationalError, sa.exc.InterfaceError)


@dataclass(frozen=True)
class Op:
    number: int
    kind: str
    executor: str  # the host that runs it (whose process, in process mode)
    instance: str | None = None
    migration: str | None = None
    target: str | None = None  # destination / boot host / the down source (evacuations)
    flavor: v.Flavor | None = None
    # How a two-way operation goes (drawn together, so one draw decides all):
    to_named_host: bool = False  # migrate/resize: to ``target``, not the scheduler's pick
    abort: bool = False  # failed live migration: aborted (cancelled), not failed
    after_copy: bool = False  # delete mid-move: after the resize's migrate step


# How an operation ends: done; refused by an expected error; its database
# connection dropped under it (its host then settles it); cut short by a
# kill of its host; a bug.
OK, REFUSED, FAULT, INTERRUPTED, ERROR = "ok", "refused", "fault", "interrupted", "error"
OUTCOME_KINDS = (OK, REFUSED, FAULT, INTERRUPTED, ERROR)


@dataclass(frozen=True)
class Outcome:
    """How one operation ended: one of OUTCOME_KINDS and, but for ``ok``,
    what happened (the error's class; for a bug also its message)."""

    kind: str
    detail: str = ""

    def __str__(self) -> str:
        return f"{self.kind}: {self.detail}" if self.detail else self.kind


@dataclass(frozen=True)
class View:
    """What the chooser knows: the records after the previous operation."""

    hosts: Sequence[str]
    instances: Sequence[v.Instance]
    migrations: Sequence[v.Migration]  # unfinished
    down: frozenset[str] = frozenset()
    flavors: Sequence[v.Flavor] = FLAVORS  # what boots and resizes choose from

    @property
    def up(self) -> list[str]:
        return [h for h in self.hosts if h not in self.down]


WEIGHTS: Mapping[str, float] = {
    BOOT: 3.0, DELETE: 0.8, MIGRATE: 1.0, RESIZE: 1.0, SAME_HOST_RESIZE: 0.6, LIVE: 1.0,
    LIVE_FAIL: 0.5, EVACUATE: 0.2, CONFIRM: 1.5, REVERT: 1.0, SHELVE: 0.6, UNSHELVE: 0.6,
    DELETE_MID_MOVE: 0.5,
}


def choose(rng: random.Random, number: int, view: View) -> Op:
    """The next operation: a kind by weight among those that have a subject."""
    up = sorted(view.up)
    moving = {m.instance_uuid for m in view.migrations}
    idle = [i for i in view.instances if i.vm_state == v.ACTIVE and i.task_state is None
            and i.uuid not in moving and i.host in up]
    shelved = [i for i in view.instances
               if i.vm_state == v.SHELVED_OFFLOADED and i.task_state is None]
    live_ones = [i for i in view.instances if i.vm_state not in (v.DELETED,)]
    waiting = [m for m in view.migrations if m.status == "finished"
               and m.migration_type in ("migration", "resize")]
    by_uuid = {i.uuid: i for i in view.instances}
    waiting = [m for m in waiting if by_uuid.get(m.instance_uuid) is not None
               and by_uuid[m.instance_uuid].host in up]
    crowded = len([i for i in live_ones if i.vm_state != v.SHELVED_OFFLOADED]) \
        > 3 * len(view.hosts)
    kinds = []
    for kind in WEIGHTS:
        weight = WEIGHTS[kind]
        if kind == BOOT:
            weight = 0.6 if crowded else weight
            possible = bool(up)
        elif kind == UNSHELVE:
            possible = bool(shelved) and bool(up)
        elif kind in (CONFIRM, REVERT):
            possible = bool(waiting)
        elif kind in (MIGRATE, LIVE, LIVE_FAIL, EVACUATE):
            possible = bool(idle) and len(up) > 1
        else:
            possible = bool(idle)
        if possible:
            kinds.append((kind, weight))
    kind = rng.choices([k for k, _ in kinds], [w for _, w in kinds])[0]
    flavors = list(view.flavors)
    flavor = rng.choice(flavors)
    if kind == BOOT:
        host = rng.choice(up)
        return Op(number, kind, host, target=host, flavor=flavor)
    if kind == UNSHELVE:
        instance = rng.choice(shelved)
        host = rng.choice(up)
        return Op(number, kind, host, instance=instance.uuid, target=host)
    if kind in (CONFIRM, REVERT):
        migration = rng.choice(waiting)
        host = by_uuid[migration.instance_uuid].host
        return Op(number, kind, host, instance=migration.instance_uuid,
                  migration=migration.uuid)
    instance = rng.choice(idle)
    if kind in (RESIZE, SAME_HOST_RESIZE, DELETE_MID_MOVE) and \
            dict(flavor.resources) == dict(instance.flavor.resources):
        flavor = flavors[(flavors.index(flavor) + 1) % len(flavors)]
    others = [h for h in up if h != instance.host]
    target = rng.choice(others) if others else None
    if kind == EVACUATE:
        # The destination rebuilds the guest, so it runs the operation.
        return Op(number, kind, target or instance.host, instance=instance.uuid,
                  target=instance.host)
    if kind == SAME_HOST_RESIZE:
        target = instance.host
    way = rng.randrange(3)
    return Op(number, kind, instance.host, instance=instance.uuid, target=target,
              flavor=flavor, to_named_host=way != 0, abort=way % 2 == 1, after_copy=way == 1)


@dataclass
class HostEnv:
    """What running an operation on one host needs."""

    ctx: MoveContext
    trackers: Mapping[str, ResourceTracker]  # host -> tracker (process mode: its own)
    # Evacuation: mark the source down / bring it back (the runner decides
    # what that means: pause a thread, or kill and restart a process).
    host_down: Callable[[str], None] = field(default=lambda host: None)
    host_up: Callable[[str], None] = field(default=lambda host: None)


def execute(op: Op, env: HostEnv) -> Outcome:
    """Run ``op``; how it ended (an unexpected error is logged and returned)."""
    try:
        _run(op, env)
    except FAULTS as exc:
        return Outcome(FAULT, type(exc).__name__)
    except EXPECTED as exc:
        return Outcome(REFUSED, type(exc).__name__)
    except Exception as exc:  # a bug: counted, shown, and the soak goes on
        LOG.exception("operation %d (%s) failed unexpectedly", op.number, op.kind)
        return Outcome(ERROR, f"{type(exc).__name__}: {exc}")
    return Outcome(OK)


def boot_name(op: Op) -> str:
    return f"vm-{op.number}"


def _run(op: Op, env: HostEnv) -> None:
    ctx, tracker = env.ctx, env.trackers[op.executor]
    kind, uuid = op.kind, op.instance or ""
    if kind == BOOT:
        tracker.boot(boot_name(op), op.flavor or FLAVORS[0], project_id=PROJECT,
                     user_id=USER)
    elif kind == DELETE:
        tracker.delete(uuid)
    elif kind == SHELVE:
        tracker.shelve_offload(uuid)
    elif kind == UNSHELVE:
        tracker.unshelve(uuid)
    elif kind == MIGRATE:
        migrate.migrate(ctx, uuid, to_host=op.target if op.to_named_host else None)
    elif kind in (RESIZE, SAME_HOST_RESIZE):
        resize.run(ctx, uuid, op.flavor, to_host=op.target if kind == SAME_HOST_RESIZE
                   or op.to_named_host else None)
    elif kind == LIVE:
        migration = live.start(ctx, uuid, to_host=op.target)
        live.complete(ctx, migration.uuid)
    elif kind == LIVE_FAIL:
        migration = live.start(ctx, uuid, to_host=op.target)
        live.rollback(ctx, migration.uuid, abort=op.abort)
    elif kind == CONFIRM:
        resize.confirm(ctx, op.migration or "")
    elif kind == REVERT:
        resize.revert(ctx, op.migration or "")
    elif kind == DELETE_MID_MOVE:
        migration = resize.start(ctx, uuid, op.flavor)
        if op.after_copy:
            resize.migrate(ctx, migration.uuid)
        tracker.delete(uuid)
    elif kind == EVACUATE:
        source = op.target or ""
        env.host_down(source)
        try:
            evacuate.evacuate(ctx, uuid, to_host=op.executor)
        finally:
            env.host_up(source)
    elif kind == OUTAGE_EVACUATE:  # the source is down already
        evacuate.evacuate(ctx, uuid, to_host=op.executor)
    else:
        raise ValueError(f"unknown operation {kind!r}")
