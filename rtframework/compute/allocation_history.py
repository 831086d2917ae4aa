"""Allocation history records: every allocation change, who made it and why
(written by :mod:`rtframework.history`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import sqlalchemy as sa

from rtframework import db
from rtframework.compute import models
from rtframework.compute.records import Records, filtered, now, value
from rtframework.compute.values import AllocationChange


class AllocationHistoryRecords(Records):

    def add_allocation_changes(
        self, changes: Iterable[tuple[str, str, Mapping[str, int], Mapping[str, int]]],
        *, who: str, why: str,
    ) -> None:
        """Record (consumer, provider, before, after) rows in one transaction."""
        stamp = now()
        rows = [{"consumer_uuid": c, "provider_uuid": p, "before": dict(b), "after": dict(a),
                 "who": who[:255], "why": why, "created_at": stamp}
                for c, p, b, a in changes]
        if not rows:
            return
        with db.transaction(self.engine) as conn:
            conn.execute(models.allocation_history.insert(), rows)

    def list_allocation_history(
        self, *, consumer_uuid: str | None = None, provider_uuid: str | None = None,
    ) -> list[AllocationChange]:
        """Recorded allocation changes, oldest first."""
        table = models.allocation_history
        return self._all(filtered(sa.select(table).order_by(table.c.id), equal={
            table.c.consumer_uuid: consumer_uuid, table.c.provider_uuid: provider_uuid}),
            _change)


def _change(row: Mapping[str, Any]) -> AllocationChange:
    return value(AllocationChange, row,
                 before={k: int(n) for k, n in row["before"].items()},
                 after={k: int(n) for k, n in row["after"].items()})
