"""Operator commands over the placement backend: providers, inventory,
allocations, usages, resource classes and traits."""

from __future__ import annotations

from cliff.lister import Lister
from cliff.show import ShowOne

from rtframework.cmd import arguments, names
from rtframework.cmd.columns import Names, Optional
from rtframework.placement import types as t


def _resources(pairs: list[str]) -> dict[str, int]:
    found: dict[str, int] = {}
    for pair in pairs or ():
        rc, sep, amount = pair.partition("=")
        if not sep or not amount.isdigit():
            raise ValueError(f"--resource wants CLASS=AMOUNT, got {pair!r}")
        if rc in found:
            raise ValueError(f"--resource names {rc} twice ({rc}={found[rc]} and {pair}); "
                             "give each class once")
        found[rc] = int(amount)
    return found


_PROVIDER_COLUMNS = ("UUID", "Name", "Generation", "Parent", "Root")


def _provider_row(rp: t.ResourceProvider) -> tuple:
    return (rp.uuid, rp.name, rp.generation, Optional(rp.parent_uuid), Optional(rp.root_uuid))


def add_trait_and_aggregate_filters(parser, what: str) -> None:
    """--required, --forbidden and --member-of, as placement's queries take them."""
    parser.add_argument("--required", action="append", default=[], metavar="TRAIT",
                        help=f"Only {what} with this trait (repeatable).")
    parser.add_argument("--forbidden", action="append", default=[], metavar="TRAIT",
                        help=f"Only {what} without this trait (repeatable).")
    parser.add_argument("--member-of", action="append", default=[], metavar="AGG[,AGG]",
                        help="Member of any of these aggregates; repeat to require several.")


class ProvidersList(Lister):
    """List resource providers, optionally filtered."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("--name", help="The provider with this name.")
        parser.add_argument("--uuid", help="The provider with this uuid.")
        parser.add_argument("--in-tree", metavar="PROVIDER",
                            help="Providers of the tree this provider (uuid or name) "
                            "belongs to.")
        add_trait_and_aggregate_filters(parser, "providers")
        parser.add_argument("--resource", action="append", default=[], metavar="CLASS=AMOUNT",
                            help="The provider itself has room for AMOUNT of CLASS.")
        return parser

    def take_action(self, parsed_args):
        query = t.ProviderQuery(
            uuid=parsed_args.uuid, name=parsed_args.name,
            in_tree=(names.provider_uuid(self.app.backend, parsed_args.in_tree)
                     if parsed_args.in_tree else None),
            required_traits=frozenset(parsed_args.required),
            forbidden_traits=frozenset(parsed_args.forbidden),
            member_of=tuple(frozenset(m.split(",")) for m in parsed_args.member_of),
            resources=_resources(parsed_args.resource),
        )
        providers = self.app.backend.list_providers(query)
        return _PROVIDER_COLUMNS, [_provider_row(rp) for rp in providers]


class ProvidersShow(names.OneProvider, ShowOne):
    """Show one provider with its traits and aggregates."""

    def take_action(self, parsed_args):
        backend = self.app.backend
        rp = self.provider(parsed_args)
        traits = backend.get_provider_traits(rp.uuid).traits
        aggregates = backend.get_provider_aggregates(rp.uuid).aggregates
        return (
            _PROVIDER_COLUMNS + ("Traits", "Aggregates"),
            _provider_row(rp) + (Names(traits), Names(aggregates)),
        )


class InventoryShow(names.OneProvider, Lister):
    """Show a provider's inventory with current usage."""

    def take_action(self, parsed_args):
        backend = self.app.backend
        uuid = self.provider_uuid(parsed_args)
        invs = backend.get_inventories(uuid)
        used = backend.get_provider_usages(uuid)
        columns = ("Resource class", "Total", "Reserved", "Min unit", "Max unit", "Step size",
                   "Allocation ratio", "Capacity", "Used")
        rows = [
            (rc, inv.total, inv.reserved, inv.min_unit, inv.max_unit, inv.step_size,
             inv.allocation_ratio, inv.capacity, used.get(rc, 0))
            for rc, inv in sorted(invs.inventories.items())
        ]
        return columns, rows


class AllocationsShow(Lister):
    """Show what a consumer holds, per provider and class."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("consumer", metavar="CONSUMER",
                            help="Consumer uuid (an instance's or a migration's), or an "
                            "instance name.")
        return parser

    def take_action(self, parsed_args):
        backend, store = self.app.backend, self.app.compute
        got = backend.get_consumer_allocations(names.consumer_uuid(store, parsed_args.consumer))
        label = names.Names(backend, store)
        rows = [
            (provider, label.provider(provider), rc, amount, got.generation, got.project_id,
             got.user_id)
            for provider, resources in sorted(got.allocations.items())
            for rc, amount in sorted(resources.items())
        ]
        return ("Provider", "Provider name", "Resource class", "Amount", "Consumer generation",
                "Project", "User"), rows


class Usages(Lister):
    """Usage of one provider, or of a project (and user) with --project."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("provider", nargs="?", metavar="PROVIDER",
                            help="Provider uuid or name.")
        parser.add_argument("--project", type=arguments.name,
                            help="Usage of everything this project holds.")
        parser.add_argument("--user", type=arguments.name,
                            help="With --project: only what this user holds.")
        return parser

    def take_action(self, parsed_args):
        backend = self.app.backend
        if (parsed_args.provider is None) == (parsed_args.project is None):
            raise ValueError("give either a PROVIDER (uuid or name) or --project")
        if parsed_args.user is not None and parsed_args.project is None:
            raise ValueError("--user needs --project")
        if parsed_args.project is not None:
            used = backend.get_project_usages(parsed_args.project, parsed_args.user)
        else:
            used = backend.get_provider_usages(
                names.provider_uuid(backend, parsed_args.provider))
        return ("Resource class", "Used"), sorted(used.items())


class ResourceClassesList(Lister):
    """List standard and custom resource classes."""

    def take_action(self, parsed_args):
        return ("Name",), [(name,) for name in self.app.backend.list_resource_classes()]


class TraitsList(Lister):
    """List standard and custom traits."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("--prefix", help="Only traits whose name starts with this.")
        return parser

    def take_action(self, parsed_args):
        return ("Name",), [(name,) for name in self.app.backend.list_traits(parsed_args.prefix)]
