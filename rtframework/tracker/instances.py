"""Instance lifecycle on one host: boot, delete, shelve offload, unshelve,
and the claim and release they make (Nova's compute manager).

Every operation runs on the :class:`~rtframework.moves.context.MoveContext`
the moves use, with ``host`` naming the host it runs on (its driver is
``ctx.drivers[host]``). Each one leaves nothing half-done on an error it
raises: a boot without capacity leaves no record, a failed spawn leaves
an ERROR (boot) or SHELVED_OFFLOADED (unshelve) instance holding nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from rtframework import claim_request, retry, room
from rtframework.compute import errors as cerrors
from rtframework.compute import flavors
from rtframework.compute import values as cv
from rtframework.compute.values import Flavor, Instance
from rtframework.driver import ComputeDriver, DriverError, InstanceSpec
from rtframework.moves import delete as move_delete
from rtframework.moves import errors as merrors
from rtframework.moves import preconditions
from rtframework.moves.context import MoveContext
from rtframework.placement import errors as perrors
from rtframework.placement import types as t
from rtframework.placement.counting import CountingBackend
from rtframework.tracker.allocation_log import format_resources, log_allocations

SHELVING = "shelving_offloading"
UNSHELVING = "unshelving"


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


def validate_flavor(flavor: Flavor) -> None:
    """Refuse a flavor placement would refuse, before anything is written."""
    why = flavors.problem(flavor)
    if why is not None:
        raise InvalidFlavor(why)


def instance_spec(instance: Instance, node: str | None = None) -> InstanceSpec:
    """What the driver needs to run ``instance`` on ``node`` (default: its own)."""
    return InstanceSpec(
        uuid=instance.uuid, name=instance.name, node=node or instance.node or "",
        resources=dict(instance.flavor.resources), flavor_name=instance.flavor.name,
    )


def boot(ctx: MoveContext, host: str, name: str, flavor: Flavor, *, project_id: str,
         user_id: str, node: str | None = None, uuid: str | None = None) -> Instance:
    """Record, claim, spawn: an ACTIVE instance on ``host``, or an error
    with nothing left behind (no capacity), or an ERROR instance holding
    nothing (failed spawn)."""
    validate_flavor(flavor)
    nodes = _nodes_for(ctx, host, node)
    preconditions.check(ctx.conf, ctx.store, preconditions.BOOT, None, dest_host=host)
    instance = ctx.store.create_instance(
        name, flavor, project_id=project_id, user_id=user_id, host=host,
        node=nodes[0], uuid=uuid)
    try:
        chosen = _claim_on(ctx, host, nodes, instance, "boot")
    except Exception:
        ctx.store.purge_instance(instance.uuid)
        raise
    if chosen != instance.node:
        instance = ctx.store.update_instance(instance.uuid, node=chosen)
    _spawn_or_release(ctx, host, instance, "boot", vm_state=cv.ERROR, keep_host=True)
    try:
        return ctx.store.update_instance(
            instance.uuid, expected_vm_state=cv.BUILDING, vm_state=cv.ACTIVE)
    except cerrors.StateConflict:
        # Deleted while it was being built: stop it and make sure
        # the claim goes too (the delete may have run before it).
        _driver(ctx, host).destroy(instance_spec(instance))
        release(ctx, [instance.uuid], "instance deleted while building")
        raise


def delete(ctx: MoveContext, host: str, ref: str) -> Instance:
    """Delete an instance of ``host`` (or of none) at any phase: the
    one delete of :func:`rtframework.moves.delete.delete` (guest
    destroyed, marked DELETED, everything it and its unfinished
    migrations hold removed, those migrations closed as ``error``)."""
    instance = ctx.store.lookup_instance(ref)
    if instance.vm_state == cv.DELETED:
        raise InvalidInstanceState(f"instance {instance.uuid} is already deleted")
    _check_owned(host, instance, allow_unowned=True)
    try:
        return move_delete.delete(ctx, instance.uuid)
    except merrors.InstanceGone as exc:
        raise InvalidInstanceState(str(exc)) from exc


def shelve_offload(ctx: MoveContext, host: str, ref: str) -> Instance:
    """Destroy an ACTIVE instance, release its claim, clear its host."""
    instance = ctx.store.lookup_instance(ref)
    _check_owned(host, instance)
    if instance.vm_state != cv.ACTIVE or instance.task_state is not None:
        raise InvalidInstanceState(
            f"instance {instance.uuid} is {instance.vm_state} (task "
            f"{instance.task_state}); only an ACTIVE idle instance can be shelved")
    preconditions.check(ctx.conf, ctx.store, preconditions.SHELVE_OFFLOAD, instance)
    ctx.store.update_instance(
        instance.uuid, expected_vm_state=cv.ACTIVE, expected_task_state=None,
        expected_host=host, task_state=SHELVING)
    _driver(ctx, host).destroy(instance_spec(instance))
    # The host is kept until the claim is gone, so that this host's
    # heal still owns the instance if we stop half-way.
    # Only if nobody deleted it meanwhile (a delete wins and releases).
    ctx.store.update_instance(
        instance.uuid, expected_vm_state=cv.ACTIVE,
        expected_task_state=SHELVING, vm_state=cv.SHELVED_OFFLOADED,
        task_state=None)
    release(ctx, [instance.uuid], "shelve offload")
    return ctx.store.update_instance(
        instance.uuid, expected_vm_state=cv.SHELVED_OFFLOADED, host=None, node=None)


def unshelve(ctx: MoveContext, host: str, ref: str, node: str | None = None) -> Instance:
    """Claim a SHELVED_OFFLOADED instance on ``host`` again and spawn it."""
    instance = ctx.store.lookup_instance(ref)
    if instance.vm_state != cv.SHELVED_OFFLOADED or instance.task_state is not None:
        raise InvalidInstanceState(
            f"instance {instance.uuid} is {instance.vm_state} (task "
            f"{instance.task_state}); only a SHELVED_OFFLOADED one can be unshelved")
    nodes = _nodes_for(ctx, host, node)
    preconditions.check(ctx.conf, ctx.store, preconditions.UNSHELVE, instance,
                        dest_host=host)
    shelved = instance
    try:
        instance = ctx.store.update_instance(
            instance.uuid, expected_vm_state=cv.SHELVED_OFFLOADED,
            expected_task_state=None, expected_host=shelved.host, host=host,
            node=nodes[0], task_state=UNSHELVING)
    except cerrors.StateConflict as exc:
        raise InvalidInstanceState(str(exc)) from exc
    try:
        chosen = _claim_on(ctx, host, nodes, instance, "unshelve")
    except Exception:
        _back_to_shelved(ctx, host, shelved)
        raise
    instance = ctx.store.update_instance(instance.uuid, node=chosen)
    _spawn_or_release(ctx, host, instance, "unshelve", vm_state=cv.SHELVED_OFFLOADED,
                      keep_host=False)
    return ctx.store.update_instance(
        instance.uuid, expected_task_state=UNSHELVING, vm_state=cv.ACTIVE,
        task_state=None)


def claim(ctx: MoveContext, host: str, consumer: str, resources: Mapping[str, int],
          nodename: str, *, project_id: str, user_id: str, reason: str) -> t.Allocations:
    """Claim ``resources`` for a new consumer on one node's tree (child
    providers included); NoCapacity if it cannot hold them."""
    root = _driver(ctx, host).get_node_uuid(nodename)
    try:
        found = ctx.backend.get_allocation_candidates(
            claim_request.for_node(ctx.backend, root, resources))
    except perrors.ResourceClassNotFound:
        # No provider anywhere offers the class: say what this tree has.
        found = t.AllocationCandidates((), {})
    for request in found.allocation_requests:
        try:
            ctx.backend.put_allocations(
                consumer, request.allocations, project_id=project_id, user_id=user_id,
                consumer_generation=None)
        except perrors.CapacityExceeded:
            continue  # lost a race for this candidate; try the next
        except perrors.ConsumerGenerationConflict as exc:
            raise TrackerError(f"consumer {consumer} already holds allocations: {exc}") \
                from exc
        log_allocations(consumer, request.allocations, "claimed", reason)
        return request.allocations
    raise NoCapacity(_no_capacity_message(ctx, host, nodename, root, resources))


def release(ctx: MoveContext, consumers: Sequence[str], reason: str) -> None:
    """Remove everything ``consumers`` hold in one atomic, consumer
    generation guarded write; a lost race re-reads."""

    def attempt() -> None:
        held = [ctx.backend.get_consumer_allocations(c) for c in consumers]
        held = [h for h in held if h.allocations]
        if held:
            ctx.backend.write_allocations([h.emptied() for h in held])
        for h in held:
            log_allocations(h.consumer_uuid, h.allocations, "removed", reason)

    retry.on_conflict(attempt, ctx.conf.placement.conflict_retries,
                      f"release {', '.join(consumers)}", conflict_counter(ctx))


def conflict_counter(ctx: MoveContext) -> Callable[[], None] | None:
    """Where a lost generation race is counted: the counting backend's
    stats (the tracker always counts), else nowhere."""
    backend = ctx.backend
    return backend.stats.conflict if isinstance(backend, CountingBackend) else None


def _driver(ctx: MoveContext, host: str) -> ComputeDriver:
    return ctx.drivers[host]


def _nodes_for(ctx: MoveContext, host: str, node: str | None) -> list[str]:
    nodes = _driver(ctx, host).get_available_nodes()
    if node is None:
        return nodes
    if node not in nodes:
        raise UnknownNode(f"host {host} has no node {node!r}; it has "
                          f"{', '.join(nodes)}")
    return [node]


def _claim_on(ctx: MoveContext, host: str, nodes: Sequence[str], instance: Instance,
              reason: str) -> str:
    """Claim the instance's flavor on the first node that holds it."""
    failures = []
    for nodename in nodes:
        try:
            claim(ctx, host, instance.uuid, instance.flavor.resources, nodename,
                  project_id=instance.project_id, user_id=instance.user_id,
                  reason=f"{reason} of {instance.name} on host {host}")
            return nodename
        except NoCapacity as exc:
            failures.append(str(exc))
    raise NoCapacity("; ".join(failures))


def _spawn_or_release(ctx: MoveContext, host: str, instance: Instance, reason: str,
                      vm_state: str, keep_host: bool) -> None:
    try:
        _driver(ctx, host).spawn(instance_spec(instance))
    except DriverError as exc:
        release(ctx, [instance.uuid], f"failed {reason}")
        fields = {} if keep_host else {"host": None, "node": None}
        ctx.store.update_instance(instance.uuid, vm_state=vm_state, task_state=None,
                                  **fields)
        raise BootFailed(f"{reason} of instance {instance.uuid} ({instance.name}) on "
                         f"{host}/{instance.node} failed: {exc}; its claim was "
                         "removed") from exc


def _back_to_shelved(ctx: MoveContext, host: str, shelved: Instance) -> None:
    """Undo the unshelve's take: the record as it was before, host
    included. A shelve offload that stopped before its release leaves
    the host set and a claim behind; clearing the host would make
    that claim nobody's, and no heal could remove it."""
    ctx.store.update_instance(
        shelved.uuid, expected_vm_state=cv.SHELVED_OFFLOADED,
        expected_task_state=UNSHELVING, expected_host=host,
        host=shelved.host, node=shelved.node, task_state=None)


def _check_owned(host: str, instance: Instance, allow_unowned: bool = False) -> None:
    if instance.host == host or (allow_unowned and instance.host is None):
        return
    raise NotOwned(f"instance {instance.uuid} ({instance.name}) is on host "
                   f"{instance.host}, not {host}")


def _no_capacity_message(ctx: MoveContext, host: str, nodename: str, root: str,
                         resources: Mapping[str, int]) -> str:
    try:
        why = room.explain(ctx.backend, root, resources)
    except perrors.ProviderNotFound:
        return (f"node {nodename} of host {host} is not in placement yet; run "
                "'rtf compute update' on that host first")
    return (f"node {nodename} of host {host} cannot hold {format_resources(resources)}"
            f" ({why})")
