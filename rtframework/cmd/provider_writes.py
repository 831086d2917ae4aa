"""Operator writes on providers: ``rtf inventory set|delete``, ``rtf traits
set``, ``rtf aggregates set`` and ``rtf resource-classes create``.

Every provider write names the provider generation it was decided on:
``--generation N`` when given (what the operator last saw), else the one
read just before. A provider that moved on since is refused with the
generation it is at now, and nothing is written.
"""

from __future__ import annotations

import dataclasses
import uuid as uuidlib

from cliff.show import ShowOne

from rtframework.cmd import arguments, names
from rtframework.cmd.columns import Names, Nested
from rtframework.placement import errors as perrors
from rtframework.placement import types as t

_INVENTORY_FIELDS = ("total", "reserved", "min_unit", "max_unit", "step_size",
                     "allocation_ratio")


class StaleGeneration(Exception):
    """The provider changed since the generation the write names."""


class _ProviderWrite(names.OneProvider, ShowOne):
    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            "--generation", type=arguments.generation, metavar="N",
            help="Provider generation this change is based on (as shown by providers "
            "show); refused if the provider has changed since. Default: the current one.")
        return parser

    def write(self, rp: t.ResourceProvider, read_generation: int, parsed_args, do) -> int:
        """Run ``do(generation)``; a generation conflict becomes StaleGeneration."""
        expected = read_generation if parsed_args.generation is None else parsed_args.generation
        try:
            return do(expected)
        except perrors.ProviderGenerationConflict:
            now = self.app.backend.get_provider(rp.uuid).generation
            raise StaleGeneration(
                f"provider {rp.name} ({rp.uuid}) is at generation {now}, not {expected}: it "
                f"changed since; nothing was written. Look again (rtf providers show "
                f"{rp.name}) and repeat with --generation {now}") from None


def _parse_inventory_items(items: list[str]) -> dict[str, dict[str, float]]:
    """``VCPU=8``, ``VCPU:allocation_ratio=4`` -> {"VCPU": {"total": 8, ...}}."""
    found: dict[str, dict[str, float]] = {}
    for item in items:
        key, sep, value = item.partition("=")
        rc, _, field = key.partition(":")
        field = field or "total"
        if not sep or not rc or field not in _INVENTORY_FIELDS:
            raise ValueError(f"--resource wants CLASS=TOTAL or CLASS:FIELD=VALUE with FIELD "
                             f"one of {', '.join(_INVENTORY_FIELDS)}; got {item!r}")
        try:
            number = float(value) if field == "allocation_ratio" else int(value)
        except ValueError:
            raise ValueError(f"--resource {item!r}: {value!r} is not a number") from None
        found.setdefault(rc.strip().upper(), {})[field] = number
    return found


class _InventoryColumn(Nested):
    """class -> every field: ``VCPU=8,allocation_ratio=4.0 ...`` in a table
    (the fields left at their default unsaid), all of them in JSON."""

    def human_readable(self) -> str:
        return " ".join(
            f"{rc}={fields['total']}" + "".join(
                f",{f}={fields[f]}" for f in _INVENTORY_FIELDS[1:]
                if fields[f] != getattr(t.Inventory(total=fields["total"]), f))
            for rc, fields in self._value.items())


def _inventory_rows(invs: t.ProviderInventories) -> _InventoryColumn:
    return _InventoryColumn({rc: {f: getattr(inv, f) for f in _INVENTORY_FIELDS}
                             for rc, inv in invs.inventories.items()})


class _InventoryWrite(_ProviderWrite):
    def inventory_result(self, rp: t.ResourceProvider, generation: int):
        inventory = _inventory_rows(self.app.backend.get_inventories(rp.uuid))
        return ("Provider", "Name", "Generation", "Inventory"), (rp.uuid, rp.name, generation,
                                                                 inventory)


class InventorySet(_InventoryWrite):
    """Set a provider's inventory: every class named, the others removed.

    --amend keeps the classes and fields not named. Placement's defaults
    fill fields never given (reserved 0, ratio 1.0, ...).
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("--resource", action="append", required=True,
                            metavar="CLASS=TOTAL|CLASS:FIELD=VALUE",
                            help="A class's total, or one field of it (reserved, min_unit, "
                            "max_unit, step_size, allocation_ratio); repeatable.")
        parser.add_argument("--amend", action="store_true",
                            help="Change only what is named; keep the other classes.")
        return parser

    def take_action(self, parsed_args):
        backend = self.app.backend
        rp = self.provider(parsed_args)
        current = backend.get_inventories(rp.uuid)
        wanted = dict(current.inventories) if parsed_args.amend else {}
        for rc, fields in _parse_inventory_items(parsed_args.resource).items():
            base = current.inventories.get(rc) if parsed_args.amend else None
            if base is None and "total" not in fields:
                raise ValueError(f"--resource: class {rc} needs a total ({rc}=TOTAL)")
            wanted[rc] = dataclasses.replace(base, **fields) if base else t.Inventory(**fields)
        for rc in wanted:
            if rc.startswith("CUSTOM_"):
                backend.ensure_resource_class(rc)
        generation = self.write(rp, current.generation, parsed_args,
                                lambda g: backend.set_inventories(rp.uuid, g, wanted))
        return self.inventory_result(rp, generation)


class InventoryDelete(_InventoryWrite):
    """Remove one resource class from a provider's inventory (if unused)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("--resource-class", required=True, metavar="CLASS",
                            help="The class to remove; refused while anything holds it.")
        return parser

    def take_action(self, parsed_args):
        backend = self.app.backend
        rp = self.provider(parsed_args)
        rc = parsed_args.resource_class.upper()
        current = backend.get_inventories(rp.uuid)
        if rc not in current.inventories:
            raise ValueError(f"provider {rp.name} has no {rc} inventory")
        generation = self.write(rp, current.generation, parsed_args,
                                lambda g: backend.delete_inventory(rp.uuid, g, rc))
        return self.inventory_result(rp, generation)


class TraitsSet(_ProviderWrite):
    """Replace a provider's traits with the ones named (none: remove all)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("--trait", action="append", default=[], metavar="TRAIT",
                            help="A trait the provider has (repeatable); a custom one "
                            "(CUSTOM_NAME) is created when missing.")
        return parser

    def take_action(self, parsed_args):
        backend = self.app.backend
        rp = self.provider(parsed_args)
        traits = frozenset(name.strip().upper() for name in parsed_args.trait)
        for name in traits:
            if name.startswith("CUSTOM_"):
                backend.ensure_trait(name)
        current = backend.get_provider_traits(rp.uuid)
        generation = self.write(rp, current.generation, parsed_args,
                                lambda g: backend.set_provider_traits(rp.uuid, g, traits))
        return (("Provider", "Name", "Generation", "Traits"),
                (rp.uuid, rp.name, generation, Names(traits)))


class AggregatesSet(_ProviderWrite):
    """Replace the aggregates a provider is a member of (none: leave all)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("--aggregate", action="append", default=[], metavar="UUID",
                            help="An aggregate uuid the provider is a member of (repeatable).")
        return parser

    def take_action(self, parsed_args):
        backend = self.app.backend
        aggregates = set()
        for text in parsed_args.aggregate:
            try:
                aggregates.add(str(uuidlib.UUID(text)))
            except ValueError:
                raise ValueError(f"--aggregate {text!r} is not a uuid") from None
        rp = self.provider(parsed_args)
        current = backend.get_provider_aggregates(rp.uuid)
        generation = self.write(
            rp, current.generation, parsed_args,
            lambda g: backend.set_provider_aggregates(rp.uuid, g, frozenset(aggregates)))
        return (("Provider", "Name", "Generation", "Aggregates"),
                (rp.uuid, rp.name, generation, Names(aggregates)))


class ResourceClassesCreate(ShowOne):
    """Create a custom resource class (a no-op if it exists)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("name", metavar="CUSTOM_NAME",
                            help="Class name, such as CUSTOM_FPGA: only custom classes "
                            "are created.")
        return parser

    def take_action(self, parsed_args):
        name = parsed_args.name.strip().upper()
        if not name.startswith("CUSTOM_"):
            raise ValueError(f"{name}: only CUSTOM_ classes can be created; the standard "
                             "ones exist already")
        self.app.backend.ensure_resource_class(name)
        return ("Name",), (name,)
