"""Choosing a destination: candidates -> claim, the next one on a lost race.

Placement answers which trees can hold a request; the scheduler ranks them
(most free capacity left after the claim, then root uuid so the choice is
the same on every run) and claims them in that order. A claim that loses
a race (another claim filled the host first, or a generation moved) is
not an error as long as another candidate remains.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import TypeVar

from rtframework import claim_request
from rtframework.placement import errors as perrors
from rtframework.placement import types as t
from rtframework.placement.backend import PlacementBackend

LOG = logging.getLogger(__name__)

T = TypeVar("T")


class NoValidHost(Exception):
    """No candidate can hold the request, or every one lost its race."""


@dataclass(frozen=True)
class Candidate:
    """One tree that can hold the request, and what to write to claim it."""

    root_uuid: str
    allocations: t.Allocations
    # Smallest share of capacity left free, over every class requested.
    free_share: float




def _root_of(request: t.AllocationRequest, summaries: Mapping[str, t.ProviderSummary]) -> str:
    """The tree a candidate is for: the one its providers other than
    sharing providers (storage pools other trees use too) belong to."""
    def root(p: str) -> str:
        return summaries[p].root_uuid if p in summaries else p

    own = {root(p) for p in request.allocations
           if p not in summaries or t.SHARING_TRAIT not in summaries[p].traits}
    return sorted(own or {root(p) for p in request.allocations})[0]


def _free_share(request: t.AllocationRequest, summaries: Mapping[str, t.ProviderSummary]) -> float:
    shares = []
    for provider, resources in request.allocations.items():
        summary = summaries.get(provider)
        for rc, amount in resources.items():
            if summary is None or rc not in summary.resources:
                continue
            res = summary.resources[rc]
            if res.capacity > 0:
                shares.append((res.capacity - res.used - amount) / res.capacity)
    return min(shares, default=0.0)


def candidates(
    backend: PlacementBackend,
    resources: Mapping[str, int],
    *,
    exclude_roots: Collection[str] = (),
    in_tree: str | None = None,
    kept: Mapping[str, Mapping[str, int]] | None = None,
) -> list[Candidate]:
    """Trees that can hold ``resources`` (the tree of ``in_tree`` only,
    with the storage pools it shares), best first.

    ``kept``: what the consumer holds on storage pools (pool uuid -> class
    -> amount) and keeps there through a move: a tree sharing such a pool
    needs only the growth in it, and is offered with the pool's whole new
    amounts (the disk stays where it is).
    """
    if in_tree is not None:
        query = claim_request.for_node(backend, in_tree, resources)
    else:
        query = t.CandidateQuery(resources={rc: n for rc, n in resources.items() if n})
    found: list[Candidate] = []
    for pool, held in sorted((kept or {}).items()):
        request = claim_request.kept_in_pool(backend, pool, held, resources, in_tree=in_tree)
        if request is not None:
            found += [Candidate(c.root_uuid, request.completed(c.allocations), c.free_share)
                      for c in _answered(backend, request.query, exclude_roots)]
    # A tree that can keep the disk in its pool is not offered another disk.
    keeping = {c.root_uuid for c in found}
    found += [c for c in _answered(backend, query, exclude_roots) if c.root_uuid not in keeping]
    found.sort(key=lambda c: (-c.free_share, c.root_uuid))
    return found


def _answered(backend: PlacementBackend, query: t.CandidateQuery,
              exclude_roots: Collection[str]) -> list[Candidate]:
    """``query``'s candidates on trees outside ``exclude_roots``."""
    answer = backend.get_allocation_candidates(query)
    found = []
    for request in answer.allocation_requests:
        root = _root_of(request, answer.provider_summaries)
        if root not in exclude_roots:
            found.append(Candidate(root, request.allocations,
                                   _free_share(request, answer.provider_summaries)))
    return found


def claim_first(
    found: list[Candidate],
    claim: Callable[[Candidate], T],
    what: str,
) -> tuple[Candidate, T]:
    """Claim the first candidate that does not lose its race.

    ``claim`` raises CapacityExceeded or a GenerationConflict when the
    candidate was taken meanwhile; anything else is the caller's error and
    propagates.
    """
    lost = []
    for candidate in found:
        try:
            return candidate, claim(candidate)
        except (perrors.CapacityExceeded, perrors.GenerationConflict) as exc:
            LOG.info("%s: candidate %s lost its race (%s); trying the next",
                     what, candidate.root_uuid, exc)
            lost.append(f"{candidate.root_uuid}: {exc}")
    if lost:
        raise NoValidHost(f"{what}: no candidate could be claimed ({'; '.join(lost)})")
    raise NoValidHost(f"{what}: no host has room")
