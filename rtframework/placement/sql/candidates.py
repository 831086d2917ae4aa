"""Allocation candidates (placeholder until the tree search lands)."""

from __future__ import annotations

import sqlalchemy as sa

from rtframework.placement import types as t


def find(conn: sa.Connection, query: t.CandidateQuery) -> t.AllocationCandidates:
    raise NotImplementedError
