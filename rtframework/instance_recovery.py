"""What a host does with its instance records when it starts.

A compute agent that was killed may have left an instance half way
through a boot, a shelve offload, an unshelve or the start of a move (the
instance taken with a task state, the migration record never written).
Nothing runs those operations any more, so the host finishes or undoes
them before its first periodic run (``rtf compute run``, ``rtf compute
reconcile``), after :func:`rtframework.moves.recovery.reconcile` has
settled the moves that have a migration record. Then it destroys the
guests it runs whose records place them elsewhere (or nowhere).

:func:`decide` is the whole policy, a pure function of one record:

| vm_state          | task_state          | holds                       | action          |
|-------------------|---------------------|-----------------------------|-----------------|
| any               | any, with an unfinished migration | -             | leave (moves)   |
| BUILDING          | any                 | anything                    | error           |
| ERROR             | none                | something                   | release         |
| ACTIVE            | shelving_offloading | anything                    | finish shelve   |
| SHELVED_OFFLOADED | none (host still set) | anything                  | finish shelve   |
| SHELVED_OFFLOADED | unshelving          | exactly its flavor, own node | finish unshelve |
| SHELVED_OFFLOADED | unshelving          | anything else               | undo unshelve   |
| other             | a task state        | anything                    | clear task      |
| other             | none                | anything                    | leave           |

"Own node" is the node's provider tree and the storage pools serving it
(a claim takes the disk from such a pool).

* error: destroy the guest, release the claim, vm_state ERROR (a killed
  boot: the user sees it failed and may delete it);
* release: an ERROR instance holds nothing (a boot marked ERROR first,
  then killed before its claim went);
* finish shelve: destroy the guest, SHELVED_OFFLOADED, release, host unset;
* finish unshelve: spawn the guest (a failed spawn undoes), ACTIVE;
* undo unshelve: release, SHELVED_OFFLOADED, host unset;
* clear task: a move that never recorded its migration wrote no claim, so
  only the task state goes.

Every record write is compare-and-swap guarded on the state it decided
from, so an operation that is in fact still running (another process of
the same host) wins or loses cleanly, and every release is consumer
generation guarded (:meth:`ResourceTracker.release`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass

from rtframework import sharing
from rtframework.compute import errors as cerrors
from rtframework.compute import values as v
from rtframework.driver import DriverError, InstanceSpec
from rtframework.moves import recovery
from rtframework.moves.context import MoveContext
from rtframework.placement import types as t
from rtframework.tracker import ResourceTracker
from rtframework.tracker.instances import SHELVING, UNSHELVING

LOG = logging.getLogger(__name__)

LEAVE = "leave"
ERROR = "error"
FINISH_SHELVE = "finish shelve"
FINISH_UNSHELVE = "finish unshelve"
UNDO_UNSHELVE = "undo unshelve"
CLEAR_TASK = "clear task"
RELEASE = "release"


def decide(instance: v.Instance, in_move: bool, holds_anything: bool,
           holds_flavor_here: bool) -> str:
    """The action for one instance of this host (see the module's table).

    ``in_move``: it has an unfinished migration; ``holds_anything``: it
    holds allocations; ``holds_flavor_here``: exactly its flavor, all of it
    in its own node's provider tree and the storage pools serving it.
    """
    if in_move or instance.vm_state == v.DELETED:
        return LEAVE
    if instance.vm_state == v.BUILDING:
        return ERROR
    if instance.vm_state == v.ERROR and instance.task_state is None:
        return RELEASE if holds_anything else LEAVE
    if instance.task_state == SHELVING:
        return FINISH_SHELVE
    if instance.vm_state == v.SHELVED_OFFLOADED:
        if instance.task_state == UNSHELVING:
            return FINISH_UNSHELVE if holds_flavor_here else UNDO_UNSHELVE
        return FINISH_SHELVE
    if instance.task_state is not None:
        return CLEAR_TASK
    return LEAVE


@dataclass(frozen=True)
class Recovered:
    """What startup recovery did to one instance (or one stray guest)."""

    instance_uuid: str
    action: str
    before: str  # "vm_state/task_state" it was found in
    after: str  # "vm_state/task_state" it was left in ("-": a stray guest)


@dataclass(frozen=True)
class HostRecovery:
    """Everything a host's startup recovery did."""

    moves: list[recovery.Reconciled]
    instances: list[Recovered]
    strays: list[Recovered]

    def __bool__(self) -> bool:
        return bool(self.moves or self.instances or self.strays)


def recover_host(tracker: ResourceTracker, ctx: MoveContext) -> HostRecovery:
    """A starting host's recovery, in order: the moves with a migration
    record (:func:`rtframework.moves.recovery.reconcile`), then the other
    interrupted operations, then the stray guests (once the records are
    settled, so a guest is judged by where its record ends)."""
    moves = recovery.reconcile(ctx, tracker.host)
    instances = recover_instances(tracker)
    return HostRecovery(moves, instances, destroy_strays(tracker))


def settle(tracker: ResourceTracker, ctx: MoveContext, instance_uuid: str) -> HostRecovery:
    """What a host does for one instance whose operation it was running
    when the operation failed half-way (its database connection dropped):
    the same as its restart would, for that instance only. Only for an
    operation nobody else runs any more."""
    moves = recovery.reconcile(ctx, tracker.host, instance_uuid=instance_uuid)
    instances = recover_instances(tracker, [instance_uuid])
    instance = tracker.compute.get_instance(instance_uuid)
    if instance.vm_state == v.DELETED and instance.host == tracker.host:
        # A delete that stopped after marking the record: its release.
        tracker.release([instance_uuid], f"delete of {instance_uuid} finished on "
                        f"{tracker.host}")
    return HostRecovery(moves, instances, [])


def recover_instances(tracker: ResourceTracker,
                      uuids: list[str] | None = None) -> list[Recovered]:
    """Finish or undo every interrupted operation on this host's instances
    (of ``uuids`` only, if given)."""
    done = []
    records = tracker.compute.list_instances(host=tracker.host, uuids=uuids)
    moving = {m.instance_uuid for m in tracker.compute.list_migrations(
        instance_uuids=[i.uuid for i in records],
        statuses=v.UNFINISHED_MIGRATION_STATUSES)}
    for instance in records:
        in_move = instance.uuid in moving
        if in_move or (instance.task_state is None
                       and instance.vm_state in (v.ACTIVE, v.RESIZED, v.DELETED)):
            continue  # the common case: nothing to read
        held = tracker.backend.get_consumer_allocations(instance.uuid).allocations
        action = decide(instance, in_move, bool(held),
                        _holds_flavor_here(tracker, instance, held))
        if action == LEAVE:
            continue
        try:
            after = _APPLY[action](tracker, instance)
        except cerrors.StateConflict as exc:
            LOG.info("recovery on %s: instance %s changed meanwhile (%s); leaving it",
                     tracker.host, instance.uuid, exc)
            continue
        done.append(Recovered(instance.uuid, action, _state(instance), _state(after)))
        LOG.warning("recovery on %s: instance %s (%s) was %s: %s, now %s", tracker.host,
                    instance.uuid, instance.name, _state(instance), action, _state(after))
    return done


def destroy_strays(tracker: ResourceTracker) -> list[Recovered]:
    """Destroy the guests this host runs that the records place on another
    host, or on none (deleted, shelved). Guests without any record are not
    the framework's and are left alone."""
    running = set(tracker.driver.list_instances())
    if not running:
        return []
    mine = tracker.known_instances()
    done = []
    for instance in tracker.compute.list_instances(uuids=sorted(running - mine)):
        if instance.host == tracker.host and instance.vm_state != v.DELETED:
            continue  # placed here after we listed it
        tracker.driver.destroy(tracker.instance_spec(instance, node=_any_node(tracker)))
        where = instance.host or "no host"
        LOG.warning("recovery on %s: destroyed the guest of instance %s (%s), which is %s "
                    "on %s", tracker.host, instance.uuid, instance.name, instance.vm_state,
                    where)
        done.append(Recovered(instance.uuid, "destroyed stray guest", _state(instance), "-"))
    return done


def _any_node(tracker: ResourceTracker) -> str:
    nodes = tracker.nodes()
    return nodes[0] if nodes else ""


def _state(instance: v.Instance) -> str:
    return f"{instance.vm_state}/{instance.task_state or '-'}"


def _holds_flavor_here(tracker: ResourceTracker, instance: v.Instance,
                       held: t.Allocations) -> bool:
    if not held or not instance.node:
        return False
    try:
        root = tracker.node_root_uuid(instance.node)
    except Exception:  # the node is gone from the driver
        return False
    if not set(held) <= sharing.node_and_pools(tracker.backend, root):
        return False
    return t.summed(held) == {rc: n for rc, n in instance.flavor.resources.items() if n}


def _spec(tracker: ResourceTracker, instance: v.Instance) -> InstanceSpec:
    return tracker.instance_spec(instance, node=instance.node or _any_node(tracker))


def _error(tracker: ResourceTracker, instance: v.Instance) -> v.Instance:
    # Marked first: from then on the boot (if it still runs somewhere)
    # loses its own compare-and-swap and cleans up after itself.
    after = tracker.compute.update_instance(
        instance.uuid, expected_vm_state=v.BUILDING, expected_task_state=instance.task_state,
        expected_host=tracker.host, vm_state=v.ERROR, task_state=None)
    tracker.driver.destroy(_spec(tracker, instance))
    tracker.release([instance.uuid], f"recovery on {tracker.host}: boot was interrupted")
    return after


def _release(tracker: ResourceTracker, instance: v.Instance) -> v.Instance:
    tracker.release([instance.uuid], f"recovery on {tracker.host}: ERROR instance "
                    "held a claim")
    return instance


def _finish_shelve(tracker: ResourceTracker, instance: v.Instance) -> v.Instance:
    tracker.driver.destroy(_spec(tracker, instance))
    if instance.vm_state != v.SHELVED_OFFLOADED:
        instance = tracker.compute.update_instance(
            instance.uuid, expected_vm_state=instance.vm_state, expected_task_state=SHELVING,
            expected_host=tracker.host, vm_state=v.SHELVED_OFFLOADED, task_state=None)
    tracker.release([instance.uuid],
                    f"recovery on {tracker.host}: finished an interrupted shelve offload")
    return tracker.compute.update_instance(
        instance.uuid, expected_vm_state=v.SHELVED_OFFLOADED, expected_task_state=None,
        expected_host=tracker.host, host=None, node=None)


def _finish_unshelve(tracker: ResourceTracker, instance: v.Instance) -> v.Instance:
    try:
        tracker.driver.spawn(_spec(tracker, instance))
    except DriverError as exc:
        LOG.warning("recovery on %s: spawning unshelved instance %s failed (%s); undoing",
                    tracker.host, instance.uuid, exc)
        return _undo_unshelve(tracker, instance)
    return tracker.compute.update_instance(
        instance.uuid, expected_vm_state=v.SHELVED_OFFLOADED, expected_task_state=UNSHELVING,
        expected_host=tracker.host, vm_state=v.ACTIVE, task_state=None)


def _undo_unshelve(tracker: ResourceTracker, instance: v.Instance) -> v.Instance:
    tracker.driver.destroy(_spec(tracker, instance))
    tracker.release([instance.uuid], f"recovery on {tracker.host}: undid an interrupted "
                    "unshelve")
    return tracker.compute.update_instance(
        instance.uuid, expected_vm_state=v.SHELVED_OFFLOADED, expected_task_state=UNSHELVING,
        expected_host=tracker.host, host=None, node=None, task_state=None)


def _clear_task(tracker: ResourceTracker, instance: v.Instance) -> v.Instance:
    return tracker.compute.update_instance(
        instance.uuid, expected_vm_state=instance.vm_state,
        expected_task_state=instance.task_state, expected_host=tracker.host, task_state=None)


_APPLY: Mapping = {
    ERROR: _error,
    FINISH_SHELVE: _finish_shelve,
    FINISH_UNSHELVE: _finish_unshelve,
    UNDO_UNSHELVE: _undo_unshelve,
    CLEAR_TASK: _clear_task,
    RELEASE: _release,
}
