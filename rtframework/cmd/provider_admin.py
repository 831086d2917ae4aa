"""``rtf providers create|delete``, ``rtf resource-classes delete`` and
``rtf traits delete``, as osc-placement's ``resource provider create|delete``,
``resource class delete`` and ``trait delete``.

A delete that would break the accounting is refused with what holds it
and nothing is changed: a provider that holds allocations or has
children, a compute node's provider (its host's agent would report it
again: the host is decommissioned with ``rtf compute-services delete``),
a class some inventory has, a trait some provider has.
"""

from __future__ import annotations

import logging

from cliff.command import Command
from cliff.show import ShowOne

from rtframework.cmd import arguments, names
from rtframework.cmd.columns import Optional
from rtframework.placement import errors as perrors
from rtframework.placement import types as t

LOG = logging.getLogger(__name__)

_SHOWN = 5


class Refused(Exception):
    """The change would break the accounting; nothing was changed."""


def listed(items: list[str]) -> str:
    """The first few of ``items``, and how many more."""
    more = len(items) - _SHOWN
    return ", ".join(items[:_SHOWN]) + (f" and {more} more" if more > 0 else "")


def consumers_on(app, uuid: str) -> list[str]:
    """The consumers holding allocations on provider ``uuid``, named."""
    label = names.Names(app.backend, app.compute)
    return [f"{c} ({name})" if (name := label.consumer(c)) else c
            for c in sorted(app.backend.get_provider_allocations(uuid))]


def delete_provider(app, rp: t.ResourceProvider) -> None:
    """Delete ``rp``; Refused naming what holds it if it is in use."""
    try:
        app.backend.delete_provider(rp.uuid)
    except perrors.ProviderInUse:
        held = consumers_on(app, rp.uuid)
        raise Refused(f"provider {rp.name} ({rp.uuid}) holds allocations of {len(held)} "
                      f"consumer(s): {listed(held)}; nothing was deleted") from None
    except perrors.CannotDeleteParent:
        children = [c.name for c in app.backend.list_providers(t.ProviderQuery(in_tree=rp.uuid))
                    if c.parent_uuid == rp.uuid]
        raise Refused(f"provider {rp.name} ({rp.uuid}) has child providers: "
                      f"{listed(sorted(children))}; delete them first; nothing was "
                      "deleted") from None
    LOG.info("deleted resource provider %s (%s)", rp.name, rp.uuid)


class ProvidersCreate(ShowOne):
    """Create a resource provider (a root, or a child with --parent-provider)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("name", metavar="NAME", type=arguments.name,
                            help="Name of the new provider (unique).")
        parser.add_argument("--uuid", type=arguments.uuid,
                            help="Its uuid (default: a new one).")
        parser.add_argument("--parent-provider", metavar="PROVIDER",
                            help="The parent provider (uuid or name); default: a root.")
        return parser

    def take_action(self, parsed_args):
        backend = self.app.backend
        parent = (names.provider_uuid(backend, parsed_args.parent_provider)
                  if parsed_args.parent_provider else None)
        rp = backend.create_provider(parsed_args.name, parsed_args.uuid, parent)
        LOG.info("created resource provider %s (%s)", rp.name, rp.uuid)
        return (("UUID", "Name", "Generation", "Parent", "Root"),
                (rp.uuid, rp.name, rp.generation, Optional(rp.parent_uuid),
                 Optional(rp.root_uuid)))


class ProvidersDelete(names.OneProvider, Command):
    """Delete a resource provider that holds nothing and has no children."""

    def take_action(self, parsed_args):
        rp = self.provider(parsed_args)
        nodes = [n for n in self.app.compute.list_compute_nodes() if n.uuid == rp.root_uuid]
        if nodes:
            node = nodes[0]
            what = "is" if rp.uuid == node.uuid else "is in the tree of"
            raise Refused(
                f"provider {rp.name} ({rp.uuid}) {what} compute node {node.nodename} of host "
                f"{node.host}, whose agent would report it again; decommission the host "
                f"with rtf compute-services delete {node.host}; nothing was deleted")
        delete_provider(self.app, rp)
        self.app.stdout.write(f"deleted provider {rp.name} ({rp.uuid})\n")
        return 0


class ResourceClassesDelete(Command):
    """Delete a custom resource class that no inventory has."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("name", metavar="CUSTOM_NAME", help="The class to delete.")
        return parser

    def take_action(self, parsed_args):
        name = parsed_args.name.strip().upper()
        try:
            self.app.backend.delete_resource_class(name)
        except perrors.ResourceClassInUse as exc:
            raise Refused(f"{exc}; remove it from their inventory first (rtf inventory "
                          "delete PROVIDER --resource-class " f"{name}); nothing was "
                          "deleted") from None
        LOG.info("deleted resource class %s", name)
        self.app.stdout.write(f"deleted resource class {name}\n")
        return 0


class TraitsDelete(Command):
    """Delete a custom trait that no provider has."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("name", metavar="CUSTOM_NAME", help="The trait to delete.")
        return parser

    def take_action(self, parsed_args):
        name = parsed_args.name.strip().upper()
        try:
            self.app.backend.delete_trait(name)
        except perrors.TraitInUse as exc:
            having = [rp.name for rp in self.app.backend.list_providers(
                t.ProviderQuery(required_traits=frozenset({name})))]
            raise Refused(f"{exc}: {listed(sorted(having))}; take it off them first (rtf "
                          "traits set PROVIDER); nothing was deleted") from None
        LOG.info("deleted trait %s", name)
        self.app.stdout.write(f"deleted trait {name}\n")
        return 0
