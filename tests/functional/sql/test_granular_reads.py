"""What the search of request groups reads: its providers' aggregates only
when the request names aggregates or a sharing provider may serve a tree,
and no tree at all when the request asks for aggregates no provider is
in. (The answers are the contract tests'; these are the reads.)"""

from __future__ import annotations

import uuid

import sqlalchemy as sa

from rtframework.placement import types as t

G = t.RequestGroup


def _statements(backend) -> list[str]:
    """Every statement the backend's engine sends from now on."""
    seen: list[str] = []
    sa.event.listen(backend.engine, "before_cursor_execute",
                    lambda _conn, _cursor, statement, *_rest: seen.append(statement))
    return seen


def _host(make_provider, aggregate: str) -> tuple[str, str]:
    root = make_provider({"VCPU": 8}, aggregates=[aggregate])
    gpu = make_provider({"VGPU": 2}, parent=root.uuid)
    return root.uuid, gpu.uuid


def _reads(statements: list[str], table: str) -> bool:
    return any(table in statement for statement in statements)


def test_aggregates_are_read_only_when_something_uses_them(backend, make_provider):
    agg = str(uuid.uuid4())
    root, gpu = _host(make_provider, agg)
    want = [{root: {"VCPU": 1}, gpu: {"VGPU": 1}}]
    seen = _statements(backend)
    for member_of in ((), (frozenset({agg}),)):
        seen.clear()
        got = backend.get_allocation_candidates(t.CandidateQuery(
            resources={"VCPU": 1}, groups={"1": G(resources={"VGPU": 1})},
            member_of=member_of))
        assert [dict(r.allocations) for r in got.allocation_requests] == want
        assert _reads(seen, "provider_aggregates") == bool(member_of)


def test_aggregates_no_provider_is_in_read_no_tree(backend, make_provider):
    agg = str(uuid.uuid4())
    _host(make_provider, agg)
    seen = _statements(backend)
    got = backend.get_allocation_candidates(t.CandidateQuery(
        resources={"VCPU": 1}, groups={"1": G(resources={"VGPU": 1},
                                              member_of=(frozenset({str(uuid.uuid4())}),))}))
    assert got.allocation_requests == ()
    assert not _reads(seen, "inventories")
