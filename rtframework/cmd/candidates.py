"""``rtf allocation-candidates list``: which trees could hold a request.

Shaped as osc-placement's ``allocation candidate list``: the options
before any ``--group`` describe the unnumbered request group; ``--group
N`` starts numbered group N, and the ``--resource``, ``--required``,
``--forbidden``, ``--member-of``, ``--not-member-of`` and ``--in-tree``
after it belong to that group (``resourcesN=...`` of the Placement API).
"""

from __future__ import annotations

import argparse

from cliff.lister import Lister

from rtframework.cmd import arguments, names
from rtframework.cmd.columns import Amounts, Lines, Names, Usage
from rtframework.cmd.placement import _resources
from rtframework.placement import types as t

_UNNUMBERED = ""


def _suffix(text: str) -> str:
    """A group suffix as Placement takes it: 1 to 64 of [a-zA-Z0-9_-]."""
    if not (0 < len(text) <= 64 and all(c.isalnum() or c in "_-" for c in text)
            and text.isascii()):
        raise argparse.ArgumentTypeError(
            f"a group suffix is 1 to 64 letters, digits, '_' or '-', got {text!r}")
    return text


class _StartGroup(argparse.Action):
    def __call__(self, parser, namespace, values, option_string=None):
        if values in namespace.groups:
            raise argparse.ArgumentError(self, f"group {values} is given twice")
        namespace.current_group = values
        namespace.groups[values] = {}


class _InGroup(argparse.Action):
    """Append the value to the current group's list of this option."""

    def __call__(self, parser, namespace, values, option_string=None):
        group = namespace.groups.setdefault(namespace.current_group, {})
        group.setdefault(self.dest, []).append(values)


def _group_fields(given: dict[str, list[str]], backend) -> dict:
    resources = _resources(given.get("resource", []))
    in_tree = given.get("in_tree", [])
    if len(in_tree) > 1:
        raise ValueError("--in-tree is given twice in one group")
    return dict(
        resources=resources,
        required_traits=frozenset(given.get("required", [])),
        forbidden_traits=frozenset(given.get("forbidden", [])),
        member_of=tuple(frozenset(m.split(",")) for m in given.get("member_of", [])),
        forbidden_aggregates=frozenset(
            a for m in given.get("not_member_of", []) for a in m.split(",")),
        in_tree=names.provider_uuid(backend, in_tree[0]) if in_tree else None,
    )


class AllocationCandidatesList(Lister):
    """List the providers that could hold a request, one row per provider used."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.set_defaults(groups={}, current_group=_UNNUMBERED)
        parser.add_argument("--group", action=_StartGroup, type=_suffix, metavar="N",
                            help="Start numbered request group N: the group options that "
                            "follow belong to it, each of its classes from one provider.")
        parser.add_argument("--resource", action=_InGroup, metavar="CLASS=AMOUNT",
                            help="An amount of a class the group needs (repeatable).")
        parser.add_argument("--required", action=_InGroup, metavar="TRAIT",
                            help="The group's providers have this trait (repeatable).")
        parser.add_argument("--forbidden", action=_InGroup, metavar="TRAIT",
                            help="The group's providers lack this trait (repeatable).")
        parser.add_argument("--member-of", action=_InGroup, metavar="AGG[,AGG]",
                            help="Member of any of these aggregates; repeat to require "
                            "several.")
        parser.add_argument("--not-member-of", action=_InGroup, metavar="AGG[,AGG]",
                            help="In none of these aggregates (repeatable; member_of=!in: "
                            "of Placement 1.32): for the unnumbered group, neither the "
                            "providers used nor the root of their tree.")
        parser.add_argument("--in-tree", action=_InGroup, metavar="PROVIDER",
                            help="Only within the tree of this provider (uuid or name).")
        parser.add_argument("--group-policy", choices=t.GROUP_POLICIES,
                            help="With several numbered groups: 'none' lets them share a "
                            "provider, 'isolate' puts each on a provider of its own.")
        parser.add_argument("--root-required", action="append", default=[],
                            metavar="[!]TRAIT",
                            help="The root of the candidate tree has (with '!': lacks) this "
                            "trait (repeatable).")
        parser.add_argument("--limit", type=arguments.positive, metavar="N",
                            help="At most N candidates.")
        return parser

    def take_action(self, parsed_args):
        backend = self.app.backend
        given = dict(parsed_args.groups)
        unnumbered = _group_fields(given.pop(_UNNUMBERED, {}), backend)
        groups = {suffix: t.RequestGroup(**_group_fields(fields, backend))
                  for suffix, fields in given.items()}
        if not unnumbered["resources"] and not any(g.resources for g in groups.values()):
            raise ValueError("the request asks for no resources: give --resource "
                             "CLASS=AMOUNT (before or after a --group N)")
        empty = [s for s, g in groups.items() if not g.resources]
        if empty:
            raise ValueError(f"group {empty[0]} asks for no resources: give --resource "
                             f"CLASS=AMOUNT after --group {empty[0]}")
        roots = parsed_args.root_required
        query = t.CandidateQuery(
            **unnumbered, limit=parsed_args.limit, groups=groups,
            group_policy=parsed_args.group_policy,
            root_required=frozenset(r for r in roots if not r.startswith("!")),
            root_forbidden=frozenset(r[1:] for r in roots if r.startswith("!")),
        )
        answer = backend.get_allocation_candidates(query)
        label = names.Names(backend, self.app.compute)
        rows = []
        for number, request in enumerate(answer.allocation_requests, 1):
            served: dict[str, list[str]] = {}
            for suffix, providers in sorted(request.mappings.items()):
                for provider in providers:
                    served.setdefault(provider, []).append(suffix or "(unnumbered)")
            for provider, resources in sorted(request.allocations.items()):
                summary = answer.provider_summaries.get(provider)
                usage = {rc: (res.used, res.capacity)
                         for rc, res in summary.resources.items()} if summary else {}
                rows.append((number, provider, label.provider(provider), Amounts(resources),
                             Lines(served.get(provider, []), " "), Usage(usage),
                             Names(summary.traits if summary else ())))
        return ("#", "Provider", "Provider name", "Allocation", "Groups", "Used/capacity",
                "Traits"), rows
