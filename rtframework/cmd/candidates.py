"""``rtf allocation-candidates list``: which trees could hold a request."""

from __future__ import annotations

from cliff.lister import Lister

from rtframework.cmd import arguments, names
from rtframework.cmd.placement import _resources, add_trait_and_aggregate_filters
from rtframework.placement import types as t


class AllocationCandidatesList(Lister):
    """List the providers that could hold a request, one row per provider used."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("--resource", action="append", required=True,
                            metavar="CLASS=AMOUNT",
                            help="An amount of a class the request needs (repeatable).")
        add_trait_and_aggregate_filters(parser, "candidates")
        parser.add_argument("--not-member-of", action="append", default=[],
                            metavar="AGG[,AGG]",
                            help="In none of these aggregates (repeatable; member_of=!in: "
                            "of Placement 1.32): neither the providers used nor the root "
                            "of their tree.")
        parser.add_argument("--in-tree", metavar="PROVIDER",
                            help="Only within the tree of this provider (uuid or name).")
        parser.add_argument("--limit", type=arguments.positive, metavar="N",
                            help="At most N candidates.")
        return parser

    def take_action(self, parsed_args):
        backend = self.app.backend
        if parsed_args.limit is not None and parsed_args.limit < 1:
            raise ValueError(f"--limit must be at least 1, got {parsed_args.limit}")
        query = t.CandidateQuery(
            resources=_resources(parsed_args.resource),
            required_traits=frozenset(parsed_args.required),
            forbidden_traits=frozenset(parsed_args.forbidden),
            member_of=tuple(frozenset(m.split(",")) for m in parsed_args.member_of),
            forbidden_aggregates=frozenset(
                a for m in parsed_args.not_member_of for a in m.split(",")),
            in_tree=(names.provider_uuid(backend, parsed_args.in_tree)
                     if parsed_args.in_tree else None),
            limit=parsed_args.limit,
        )
        answer = backend.get_allocation_candidates(query)
        label = names.Names(backend, self.app.compute)
        rows = []
        for number, request in enumerate(answer.allocation_requests, 1):
            for provider, resources in sorted(request.allocations.items()):
                summary = answer.provider_summaries.get(provider)
                usage = ", ".join(
                    f"{rc}={res.used}/{res.capacity}"
                    for rc, res in sorted(summary.resources.items())) if summary else ""
                rows.append((number, provider, label.provider(provider),
                             ",".join(f"{rc}={n}" for rc, n in sorted(resources.items())),
                             usage, " ".join(sorted(summary.traits)) if summary else ""))
        return ("#", "Provider", "Provider name", "Allocation", "Used/capacity", "Traits"), rows
