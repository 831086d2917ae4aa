"""Audit finding records: what a host's heal left alone and why."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa

from rtframework import db
from rtframework.compute import models
from rtframework.compute.records import Records, filtered, now, value
from rtframework.compute.values import AuditFinding


class AuditFindingRecords(Records):

    def add_audit_finding(self, consumer_uuid: str, host: str, kind: str, detail: str) -> None:
        with db.transaction(self.engine) as conn:
            conn.execute(models.audit_findings.insert().values(
                consumer_uuid=consumer_uuid, host=host, kind=kind, detail=detail,
                created_at=now(),
            ))

    def list_audit_findings(
        self, *, host: str | None = None, kind: str | None = None,
        consumer_uuid: str | None = None,
    ) -> list[AuditFinding]:
        table = models.audit_findings
        return self._all(filtered(sa.select(table).order_by(table.c.id), equal={
            table.c.host: host, table.c.kind: kind, table.c.consumer_uuid: consumer_uuid}),
            _finding)


def _finding(row: Mapping[str, Any]) -> AuditFinding:
    return value(AuditFinding, row)
