"""``rtf compute-services list|set|delete``: which hosts the scheduler may
use, and decommissioning one.

A host is *down* when its agent's heartbeat is older than
``service_down_time`` or an operator forced it down (only then may its
instances be evacuated), and *disabled* when an operator took it out of
scheduling. The scheduler skips both; a disabled host's nodes carry the
``COMPUTE_STATUS_DISABLED`` trait in placement, as Nova's do.
"""

from __future__ import annotations

import logging

import os_traits
from cliff.command import Command
from cliff.lister import Lister
from cliff.show import ShowOne

from rtframework import retry
from rtframework.cmd.columns import optional
from rtframework.cmd.provider_admin import Refused, consumers_on, delete_provider, listed
from rtframework.compute import values as cv
from rtframework.placement import types as t

LOG = logging.getLogger(__name__)

_COLUMNS = ("Host", "Status", "State", "Forced down", "Disabled reason", "Last seen")


def _row(service: cv.Service, up: bool) -> tuple:
    return (service.host, "disabled" if service.disabled else "enabled",
            "up" if up else "down", service.forced_down, optional(service.disabled_reason),
            service.last_seen.isoformat(timespec="seconds"))


def set_disabled_trait(app, host: str, disabled: bool) -> None:
    """Add or remove COMPUTE_STATUS_DISABLED on the host's node providers now,
    each write naming the generation it read (re-read on a lost race)."""
    backend = app.backend
    for node in app.compute.list_compute_nodes(host=host):
        def attempt(uuid=node.uuid) -> None:
            current = backend.get_provider_traits(uuid)
            wanted = (current.traits | {os_traits.COMPUTE_STATUS_DISABLED} if disabled
                      else current.traits - {os_traits.COMPUTE_STATUS_DISABLED})
            if wanted != current.traits:
                backend.set_provider_traits(uuid, current.generation, frozenset(wanted))

        retry.on_conflict(attempt, app.conf.placement.conflict_retries,
                          f"status trait of node {node.nodename} of host {host}")


class ComputeServicesList(Lister):
    """List compute hosts: enabled or disabled, up or down, and why."""

    def take_action(self, parsed_args):
        store = self.app.compute
        down_after = self.app.conf.service_down_time
        return _COLUMNS, [_row(s, store.is_host_up(s.host, down_after))
                          for s in store.list_services()]


class ComputeServicesSet(ShowOne):
    """Disable or enable a host for scheduling, or force it down or up."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("host", metavar="HOST", help="Compute host name.")
        status = parser.add_mutually_exclusive_group()
        status.add_argument("--disable", action="store_true",
                            help="Take the host out of scheduling; its instances stay.")
        status.add_argument("--enable", action="store_true",
                            help="Let the scheduler pick the host again.")
        parser.add_argument("--disable-reason", metavar="TEXT",
                            help="Why it is disabled (with --disable).")
        state = parser.add_mutually_exclusive_group()
        state.add_argument("--down", action="store_true",
                           help="Force the host down whatever its heartbeat says (after "
                           "fencing it), so that its instances may be evacuated.")
        state.add_argument("--up", action="store_true",
                           help="Clear a forced down; the heartbeat decides again.")
        return parser

    def take_action(self, parsed_args):
        args = parsed_args
        if not (args.disable or args.enable or args.down or args.up):
            raise ValueError("say what to set: --disable/--enable and/or --down/--up")
        if args.disable_reason and not args.disable:
            raise ValueError("--disable-reason goes with --disable")
        store = self.app.compute
        service = store.get_service(args.host)
        if args.disable or args.enable:
            service = store.set_disabled(args.host, args.disable, args.disable_reason)
            set_disabled_trait(self.app, args.host, args.disable)
            LOG.info("host %s %s", args.host, "disabled" if args.disable else "enabled")
        if args.down or args.up:
            service = store.set_forced_down(args.host, args.down)
            LOG.info("host %s forced %s", args.host, "down" if args.down else "up")
        up = store.is_host_up(args.host, self.app.conf.service_down_time)
        return _COLUMNS, _row(service, up)


class ComputeServicesDelete(Command):
    """Decommission a host: its service, node records and node providers.

    Refused, with nothing deleted, while the host is up (its agent would
    report it again), has instances or moves, or its providers hold
    allocations. Shared storage pools are not the host's and stay.
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("host", metavar="HOST", help="Compute host name.")
        return parser

    def take_action(self, parsed_args):
        host = parsed_args.host
        app, store, backend = self.app, self.app.compute, self.app.backend
        store.get_service(host)  # ServiceNotFound: a usage error
        if store.is_host_up(host, app.conf.service_down_time):
            raise Refused(f"host {host} is up: its agent would report it again; stop the "
                          f"agent and force the host down (rtf compute-services set {host} "
                          "--down) first; nothing was deleted")
        living = [i for i in store.list_instances(host=host) if i.vm_state != cv.DELETED]
        if living:
            raise Refused(f"host {host} still has {len(living)} instance(s): "
                          f"{listed([f'{i.name} ({i.uuid})' for i in living])}; migrate, "
                          "evacuate or delete them first; nothing was deleted")
        moving = store.list_migrations(host=host, statuses=cv.UNFINISHED_MIGRATION_STATUSES)
        if moving:
            raise Refused(f"host {host} is an end of {len(moving)} unfinished move(s): "
                          f"{listed([m.uuid for m in moving])}; finish them first (rtf "
                          "confirm, rtf revert, rtf compute reconcile); nothing was deleted")
        # Every provider of the host's trees, deepest first.
        doomed: list[t.ResourceProvider] = []
        for node in store.list_compute_nodes(host=host):
            tree = backend.list_providers(t.ProviderQuery(in_tree=node.uuid))
            doomed += sorted(tree, key=lambda rp, tree=tree: -_depth(rp, tree))
        for rp in doomed:
            held = consumers_on(app, rp.uuid)
            if held:
                raise Refused(f"provider {rp.name} ({rp.uuid}) of host {host} holds "
                              f"allocations of {len(held)} consumer(s): {listed(held)}; see "
                              f"rtf audit --resource-provider {rp.uuid}; nothing was deleted")
        for rp in doomed:
            delete_provider(app, rp)
        store.delete_service(host)
        LOG.info("host %s decommissioned: %d provider(s) deleted", host, len(doomed))
        app.stdout.write(f"deleted compute service {host} and {len(doomed)} provider(s): "
                         f"{', '.join(rp.name for rp in doomed) or 'none'}\n")
        return 0


def _depth(rp: t.ResourceProvider, tree: list[t.ResourceProvider]) -> int:
    parents = {p.uuid: p.parent_uuid for p in tree}
    depth, at = 0, rp.parent_uuid
    while at is not None:
        depth, at = depth + 1, parents.get(at)
    return depth
