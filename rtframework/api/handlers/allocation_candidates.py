"""GET /allocation_candidates (1.10), with request groups (1.25), string
suffixes (1.33), mappings (1.34), root_required (1.35), same_subtree (1.36)."""

from __future__ import annotations

import dataclasses
import itertools
import re

import webob

from rtframework.api import microversion, payload
from rtframework.api.handlers import common, query
from rtframework.placement import errors as perrors
from rtframework.placement import types as t

_GROUPED = ("resources", "required", "member_of", "in_tree")


def _suffix_pattern(v) -> str:
    return r"[a-zA-Z0-9_-]{1,64}" if v.at_least(33) else r"[1-9][0-9]*"


# Query keys of GET /allocation_candidates and the minor version each came in.
_KEYS_SINCE = (("resources", 0), ("limit", 16), ("required", 17), ("member_of", 21),
               ("group_policy", 25), ("in_tree", 31), ("root_required", 35),
               ("same_subtree", 36))


def _keys(v) -> tuple[list[str], tuple[str, ...]]:
    keys = microversion.keys_at(v, _KEYS_SINCE)
    patterns: tuple[str, ...] = ()
    if v.at_least(25):
        names = ["resources", "required", "member_of"] + (["in_tree"] if v.at_least(31) else [])
        patterns = tuple(f"^{n}({_suffix_pattern(v)})?$" for n in names)
    return keys, patterns


def _groups(req: webob.Request, v) -> dict[str, dict[str, list[str]]]:
    """suffix ('' unnumbered) -> parameter -> values."""
    found: dict[str, dict[str, list[str]]] = {}
    pattern = re.compile(rf"^({'|'.join(_GROUPED)})({_suffix_pattern(v)})?$")
    for key in req.GET.keys():
        match = pattern.match(key)
        if match and (match.group(2) is None or v.at_least(25)):
            found.setdefault(match.group(2) or "", {})[match.group(1)] = req.GET.getall(key)
    return found


# Any-of trait sets (``required=in:A,B``, 1.39) are searched as every
# choice of one trait per set, each an all-of search, and the answers
# merged: a tree has a trait of each set exactly when it matches one choice.
MOST_CHOICES = 64


def _group(params: dict[str, list[str]], v, suffix: str,
           any_of: dict[str, list[frozenset[str]]]) -> t.RequestGroup:
    resources = query.resources(params["resources"][-1]) if "resources" in params else {}
    traits = query.traits(params["required"], v, f"required{suffix}") \
        if "required" in params else query.Traits()
    if traits.any_of:
        any_of[suffix] = traits.any_of
    member_of, forbidden = query.member_of(params.get("member_of", []), v)
    in_tree = query.in_tree(params["in_tree"][-1]) if "in_tree" in params else None
    return t.RequestGroup(resources=resources, required_traits=frozenset(traits.required),
                          forbidden_traits=frozenset(traits.forbidden), member_of=member_of,
                          in_tree=in_tree, forbidden_aggregates=forbidden)


def _check_orphans(groups: dict[str, dict[str, list[str]]], v) -> None:
    """Traits or aggregates named for a group that asks for no resources."""
    if v.at_least(35):
        return
    for key in ("required", "member_of"):
        orphans = sorted(f"{key}{s}" for s, g in groups.items()
                         if key in g and "resources" not in g)
        if not orphans:
            continue
        if not v.at_least(25) or (key == "member_of" and orphans == ["member_of"]):
            raise query.bad("All member_of parameters must be associated with resources")
        kind = "traits" if key == "required" else key
        raise query.bad(f"Found the following orphaned {kind} keys: {', '.join(orphans)}")


def _query(req: webob.Request, v
           ) -> tuple[dict[str, list[frozenset[str]]], t.CandidateQuery]:
    """The any-of trait sets by group suffix, and the query without them."""
    keys, patterns = _keys(v)
    query.check_keys(req, keys, patterns)
    groups = _groups(req, v)
    _check_orphans(groups, v)
    if not any("resources" in g for g in groups.values()):
        if v.at_least(35):
            raise query.bad("There must be at least one resources or resources[$S] "
                            "parameter.", code=common.errors.QUERY_MISSING_VALUE)
        raise query.bad(
                        "At least one request group (`resources` or `resources{$S}`) is "
                        "required." if v.at_least(25) else
                        "Invalid query string parameters: 'resources' is a required property")
    any_of: dict[str, list[frozenset[str]]] = {}
    unnumbered = _group(groups.pop("", {}), v, "", any_of)
    numbered = {s: _group(p, v, s, any_of) for s, p in groups.items()}
    orphans = sorted(s for s, g in groups.items() if "resources" not in g)
    if orphans and not v.at_least(35):
        raise query.bad("All request groups must specify resources.")
    limit = query.single(req, "limit", first=True)
    if limit is not None:
        if not limit.isdigit() or int(limit) < 1:
            raise query.invalid_query(f"Failed validating 'pattern' in schema: limit "
                                      f"'{limit}' does not match '^[1-9][0-9]*$'")
    policy = query.single(req, "group_policy", first=True)
    if len(numbered) > 1 and policy is None:
        raise query.bad('The "group_policy" parameter is required when specifying more '
                        'than one "resources{N}" parameter.')
    if policy is not None and policy not in t.GROUP_POLICIES:
        raise query.invalid_query(f"'{policy}' is not one of ['none', 'isolate']")
    root = query.Traits()
    roots = req.GET.getall("root_required")
    if len(roots) > 1:
        raise query.bad("Query parameter 'root_required' may be specified only once.",
                        code=common.errors.QUERY_DUPLICATE_KEY)
    if roots:
        root = query.traits(roots, v, "root_required", conflicts=False)
        if root.required & root.forbidden:
            both = ", ".join(sorted(root.required & root.forbidden))
            raise query.bad(f"Conflicting required and forbidden traits found in "
                            f"root_required: {both}", code=common.errors.QUERY_BAD_VALUE)
    same_subtree = tuple(frozenset(name.strip() for name in s.split(","))
                         for s in req.GET.getall("same_subtree"))
    for suffixes in same_subtree:
        if "" in suffixes:
            raise query.bad("Empty string (unsuffixed group) can not be specified in "
                            "`same_subtree` ", code=common.errors.QUERY_BAD_VALUE)
        unknown = sorted(s for s in suffixes if s not in numbered)
        if unknown:
            raise query.bad(f"Real suffixes should be specified in `same_subtree`: "
                            f"{unknown} not found in request groups",
                            code=common.errors.QUERY_BAD_VALUE)
    resourceless = sorted(s for s, g in numbered.items() if not g.resources
                          and not any(s in same for same in same_subtree))
    if resourceless:
        raise query.bad("Resourceless suffixed group request should be specified in "
                        "`same_subtree` query param: bad group(s) - "
                        f"{resourceless}.", code=common.errors.QUERY_BAD_VALUE)
    return any_of, t.CandidateQuery(
        resources=unnumbered.resources, required_traits=unnumbered.required_traits,
        forbidden_traits=unnumbered.forbidden_traits, member_of=unnumbered.member_of,
        in_tree=unnumbered.in_tree, forbidden_aggregates=unnumbered.forbidden_aggregates,
        limit=int(limit) if limit else None, groups=numbered, group_policy=policy,
        root_required=frozenset(root.required), root_forbidden=frozenset(root.forbidden),
        same_subtree=same_subtree)


def _choices(q: t.CandidateQuery, any_of: dict[str, list[frozenset[str]]]
             ) -> list[t.CandidateQuery]:
    """``q`` once per choice of one trait from each any-of set."""
    slots = [(suffix, sorted(names)) for suffix, sets in sorted(any_of.items())
             for names in sets]
    count = 1
    for _, names in slots:
        count *= len(names)
    if count > MOST_CHOICES:
        raise query.bad(f"The 'in:' trait sets of this request make {count} combinations; "
                        f"at most {MOST_CHOICES} are searched.")
    queries = []
    for picked in itertools.product(*(names for _, names in slots)):
        extra: dict[str, set[str]] = {}
        for (suffix, _), name in zip(slots, picked, strict=True):
            extra.setdefault(suffix, set()).add(name)
        groups = {s: dataclasses.replace(g, required_traits=g.required_traits | extra.get(s, set()))
                  for s, g in q.groups.items()}
        queries.append(dataclasses.replace(
            q, required_traits=q.required_traits | extra.get("", set()), groups=groups))
    return queries


def _search(req: webob.Request, q: t.CandidateQuery,
            any_of: dict[str, list[frozenset[str]]]) -> t.AllocationCandidates:
    be = common.backend(req)
    if not any_of:
        return be.get_allocation_candidates(q)
    requests: dict = {}
    summaries: dict = {}
    for choice in _choices(q, any_of):
        found = be.get_allocation_candidates(choice)
        for r in found.allocation_requests:
            key = (tuple(sorted((rp, tuple(sorted(res.items())))
                                for rp, res in r.allocations.items())),
                   tuple(sorted((g, tuple(p)) for g, p in r.mappings.items())))
            requests.setdefault(key, r)
        summaries.update(found.provider_summaries)
    chosen = list(requests.values())[:q.limit] if q.limit else list(requests.values())
    used = {rp for r in chosen for rp in r.allocations}
    roots = {summaries[rp].root_uuid for rp in used if rp in summaries}
    return t.AllocationCandidates(
        allocation_requests=tuple(chosen),
        provider_summaries={rp: s for rp, s in summaries.items()
                            if rp in used or s.root_uuid in roots})


def _check_known(req: webob.Request, q: t.CandidateQuery,
                 any_of: dict[str, list[frozenset[str]]]) -> None:
    be = common.backend(req)
    classes = set(q.resources).union(*(g.resources for g in q.groups.values()))
    unknown = sorted(classes - set(be.list_resource_classes()))
    if unknown:
        raise query.bad("Invalid resource class in resources parameter: No such resource "
                        f"class {unknown[0]}.")
    traits = set(q.required_traits | q.forbidden_traits | q.root_required | q.root_forbidden)
    for g in q.groups.values():
        traits |= g.required_traits | g.forbidden_traits
    for sets in any_of.values():
        traits = traits.union(*sets)
    if traits:
        unknown = sorted(traits - set(be.list_traits()))
        if unknown:
            raise query.bad(f"No such trait(s): {', '.join(unknown)}")


def _request_json(req_: t.AllocationRequest, v) -> dict:
    if v.at_least(12):
        body: dict = {"allocations": {rp: {"resources": dict(res)}
                                      for rp, res in req_.allocations.items()}}
    else:
        body = {"allocations": [{"resource_provider": {"uuid": rp}, "resources": dict(res)}
                                for rp, res in req_.allocations.items()]}
    if v.at_least(34):
        body["mappings"] = {s: list(p) for s, p in req_.mappings.items()}
    return body


def _summaries_json(found: t.AllocationCandidates, q: t.CandidateQuery, v) -> dict:
    wanted = set(q.resources).union(*(g.resources for g in q.groups.values()))
    used = {rp for r in found.allocation_requests for rp in r.allocations}
    body = {}
    for rp, summary in found.provider_summaries.items():
        if not v.at_least(29) and rp not in used:
            continue
        entry: dict = {"resources": {
            rc: {"capacity": s.capacity, "used": s.used}
            for rc, s in summary.resources.items() if v.at_least(27) or rc in wanted}}
        if v.at_least(17):
            # Placement lists standard traits before custom ones.
            entry["traits"] = sorted(summary.traits, key=lambda n: (n.startswith("CUSTOM_"), n))
        if v.at_least(29):
            entry["parent_provider_uuid"] = summary.parent_uuid
            entry["root_provider_uuid"] = summary.root_uuid
        body[rp] = entry
    return body


@common.handler("placement:allocation_candidates:list", since=10)
def list_candidates(req: webob.Request) -> webob.Response:
    v = common.version(req)
    any_of, q = _query(req, v)
    _check_known(req, q, any_of)
    try:
        found = _search(req, q, any_of)
    except perrors.ProviderNotFound:
        found = t.AllocationCandidates(allocation_requests=(), provider_summaries={})
    requests = found.allocation_requests
    if not v.at_least(29):
        # Before 1.29 a candidate takes from one provider per tree.
        summaries = found.provider_summaries
        requests = tuple(r for r in requests if len(r.allocations) == len(
            {summaries[rp].root_uuid if rp in summaries else rp for rp in r.allocations}))
        found = t.AllocationCandidates(allocation_requests=requests,
                                       provider_summaries=summaries)
    return payload.json_response(req, {
        "allocation_requests": [_request_json(r, v) for r in requests],
        "provider_summaries": _summaries_json(found, q, v)})


ROUTES = {"/allocation_candidates": {"GET": list_candidates}}
