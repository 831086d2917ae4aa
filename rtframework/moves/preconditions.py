"""What every operation on an instance needs before it may write anything.

One table, read as Nova's API reads its own (PLACEMENT-FACTS, "Move
preconditions"); every operation checks its row before any record or
allocation is written, so a refusal changes nothing:

=============== ====================== ======== ======== ================================
operation       instance vm_state      task     source   destination
=============== ====================== ======== ======== ================================
boot            (new)                  -        -        up, enabled
delete          any but DELETED        any      -        -
migrate         ACTIVE                 none     up       up, enabled, not current, clean
resize          ACTIVE                 none     up       up, enabled, clean (same host ok)
live-migrate    ACTIVE                 none     up       up, enabled, not current, clean
evacuate        ACTIVE, ERROR          none     down     up, enabled, not current, clean
shelve-offload  ACTIVE                 none     up       -
unshelve        SHELVED_OFFLOADED      none     -        up, enabled, clean
confirm         RESIZED (move          none     -        -
                ``finished``)
revert          RESIZED (move          none     -        -
                ``finished``)
=============== ====================== ======== ======== ================================

Every operation but delete, confirm and revert also needs **no other
move of the instance in progress**: an unfinished migration record
(including an evacuation that waits for its source host to come back
and remove its half) refuses a new move, a shelve offload and an
unshelve. *clean*: the destination has no unfinished clean-up for this
instance (an unfinished move of it that names the destination host), so
a host never receives an instance whose old copy it has still to remove.

*up*: the host's agent reported within ``service_down_time`` and is not
forced down; *enabled*: the operator has not disabled the host's
service. A destination the scheduler chooses must pass the same rules;
a host that fails them is skipped, as Nova's compute filter skips it.
"""

from __future__ import annotations

from dataclasses import dataclass

from oslo_config import cfg

from rtframework.compute import errors as cerrors
from rtframework.compute import values as v
from rtframework.compute.store import ComputeStore
from rtframework.moves import errors

# What a host must be for the operation: "up", "down", or None (no rule).
UP, DOWN = "up", "down"

BOOT = "boot"
DELETE = "delete"
MIGRATE = "migrate"
RESIZE = "resize"
LIVE_MIGRATE = "live-migrate"
EVACUATE = "evacuate"
SHELVE_OFFLOAD = "shelve-offload"
UNSHELVE = "unshelve"
CONFIRM = "confirm"
REVERT = "revert"


@dataclass(frozen=True)
class Rule:
    """One row of the table."""

    vm_states: frozenset[str] | None  # None: any but DELETED
    idle: bool = True  # task_state must be none
    source: str | None = None
    destination: bool = False  # up, enabled, clean
    same_host: bool = False  # the destination may be the current host
    exclusive: bool = True  # no other move of the instance in progress
    migration_finished: bool = False  # the named migration must be ``finished``


_ALL = None
TABLE: dict[str, Rule] = {
    BOOT: Rule(vm_states=frozenset(), destination=True),
    DELETE: Rule(vm_states=_ALL, idle=False, exclusive=False),
    MIGRATE: Rule(frozenset({v.ACTIVE}), source=UP, destination=True),
    RESIZE: Rule(frozenset({v.ACTIVE}), source=UP, destination=True, same_host=True),
    LIVE_MIGRATE: Rule(frozenset({v.ACTIVE}), source=UP, destination=True),
    EVACUATE: Rule(frozenset({v.ACTIVE, v.ERROR}), source=DOWN, destination=True),
    SHELVE_OFFLOAD: Rule(frozenset({v.ACTIVE}), source=UP),
    UNSHELVE: Rule(frozenset({v.SHELVED_OFFLOADED}), destination=True),
    CONFIRM: Rule(frozenset({v.RESIZED}), exclusive=False, migration_finished=True),
    REVERT: Rule(frozenset({v.RESIZED}), exclusive=False, migration_finished=True),
}


def _refuse(operation: str, rule: str, detail: str) -> errors.PreconditionFailed:
    return errors.PreconditionFailed(f"{operation} refused ({rule}): {detail}", rule=rule)


def check(
    conf: cfg.ConfigOpts,
    store: ComputeStore,
    operation: str,
    instance: v.Instance | None,
    *,
    dest_host: str | None = None,
    migration: v.Migration | None = None,
) -> None:
    """Raise PreconditionFailed naming the rule and what broke it; read only.

    ``dest_host`` is the destination the caller named (None: the scheduler
    chooses later, through :func:`destination_problem`); ``migration`` the
    record a confirm or revert acts on.
    """
    rule = TABLE[operation]
    if instance is not None:
        _check_instance(operation, rule, instance)
    if rule.source is not None and instance is not None:
        _check_source(conf, store, operation, rule, instance)
    if rule.destination and dest_host is not None:
        problem = destination_problem(conf, store, operation, instance, dest_host)
        if problem is not None:
            raise _refuse(operation, *problem)
    if rule.exclusive and instance is not None:
        _check_no_move(conf, store, operation, instance)
    if rule.migration_finished and migration is not None and migration.status != "finished":
        raise _refuse(operation, "migration finished",
                      f"{migration.migration_type} {migration.uuid} is {migration.status}, "
                      "not finished")


def _check_instance(operation: str, rule: Rule, instance: v.Instance) -> None:
    what = f"instance {instance.uuid} ({instance.name!r})"
    if instance.vm_state == v.DELETED:
        raise errors.InstanceGone(f"{operation} refused: {what} is deleted")
    if rule.vm_states is not _ALL and instance.vm_state not in rule.vm_states:
        allowed = " or ".join(sorted(rule.vm_states))
        raise _refuse(operation, "instance state",
                      f"{what} is {instance.vm_state}; {operation} needs {allowed}")
    if rule.idle and instance.task_state is not None:
        raise errors.InstanceBusy(
            f"{operation} refused (task state): {what} is busy ({instance.task_state}); "
            f"{operation} needs no task", rule="task state")


def _check_source(conf: cfg.ConfigOpts, store: ComputeStore, operation: str, rule: Rule,
                  instance: v.Instance) -> None:
    host = instance.host
    if host is None:
        raise _refuse(operation, "source host",
                      f"instance {instance.uuid} has no host to {operation} from")
    up = store.is_host_up(host, conf.service_down_time)
    if rule.source == UP and not up:
        raise _refuse(operation, "source up",
                      f"source host {host!r} of instance {instance.uuid} is down "
                      f"({_why_down(conf, store, host)})")
    if rule.source == DOWN and up:
        raise _refuse(operation, "source down",
                      f"source host {host!r} of instance {instance.uuid} is up; only "
                      f"instances of a host that is down (no heartbeat for "
                      f"{conf.service_down_time}s, or forced down) may be evacuated")


def _why_down(conf: cfg.ConfigOpts, store: ComputeStore, host: str) -> str:
    try:
        service = store.get_service(host)
    except cerrors.ServiceNotFound:
        return "it never reported"
    if service.forced_down:
        return "forced down"
    return f"no heartbeat since {service.last_seen.isoformat(timespec='seconds')}, " \
        f"service_down_time is {conf.service_down_time}s"


def destination_problem(
    conf: cfg.ConfigOpts,
    store: ComputeStore,
    operation: str,
    instance: v.Instance | None,
    host: str,
) -> tuple[str, str] | None:
    """(rule, detail) if ``host`` may not receive ``instance`` for
    ``operation``, else None; the scheduler skips such hosts."""
    rule = TABLE[operation]
    if instance is not None and host == instance.host and not rule.same_host:
        return "destination not current host", (
            f"instance {instance.uuid} is on host {host!r} already")
    if not store.list_compute_nodes(host=host):
        return "destination known", (
            f"destination host {host!r} reports no compute node (not in placement yet; "
            "run 'rtf compute update' on that host first)")
    if not store.is_host_up(host, conf.service_down_time):
        return "destination up", (f"destination host {host!r} is down "
                                  f"({_why_down(conf, store, host)})")
    service = store.get_service(host)
    if service.disabled:
        why = f" ({service.disabled_reason})" if service.disabled_reason else ""
        return "destination enabled", f"destination host {host!r} is disabled{why}"
    if instance is not None:
        for migration in _unfinished(store, instance.uuid):
            if host in (migration.source_host, migration.dest_host):
                return "destination clean", (
                    f"destination host {host!r} has not finished cleaning up "
                    f"{migration.migration_type} {migration.uuid} of instance "
                    f"{instance.uuid} ({migration.status})")
    return None


def _unfinished(store: ComputeStore, instance_uuid: str) -> list[v.Migration]:
    return store.list_migrations(instance_uuid=instance_uuid,
                                 statuses=v.UNFINISHED_MIGRATION_STATUSES)


def _check_no_move(conf: cfg.ConfigOpts, store: ComputeStore, operation: str,
                   instance: v.Instance) -> None:
    for migration in _unfinished(store, instance.uuid):
        waiting = ""
        if migration.migration_type == "evacuation" and migration.status == "finished":
            source = migration.source_host
            if store.is_host_up(source, conf.service_down_time):
                waiting = (f"; host {source!r} is up again and its agent removes its half "
                           f"at its next pass (rtf compute reconcile --host {source} does it "
                           "now)")
            else:
                waiting = (f"; it waits for host {source!r} to come back and remove its half "
                           f"({_why_down(conf, store, source)})")
        raise _refuse(operation, "no other move",
                      f"instance {instance.uuid} has {migration.migration_type} "
                      f"{migration.uuid} in progress ({migration.status}){waiting}")
