"""Service records: each host's heartbeat, and the operator's down and
disabled marks; whether the scheduler may pick a host."""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa

from rtframework import db
from rtframework.compute import errors, models
from rtframework.compute.records import Records, to_db, upsert, utcnow, value
from rtframework.compute.values import Service


def heartbeat_in(conn: sa.Connection, host: str, at: datetime.datetime | None) -> Service:
    """Record, in the transaction of ``conn``, that ``host``'s agent is alive
    (now, or ``at``); its service record."""
    moment = to_db(at or utcnow())
    table = models.services
    if conn.dialect.update_returning:
        # The refreshed row comes back with the UPDATE: no SELECT.
        row = conn.execute(
            table.update().where(table.c.host == host).values(last_seen=moment)
            .returning(*table.c)).mappings().first()
        if row is not None:
            return service_of(row)
    upsert(conn, table, {"host": host}, {"last_seen": moment},
           {"created_at": moment, "forced_down": False})
    return service_of(conn.execute(
        sa.select(table).where(table.c.host == host)).mappings().one())


class ServiceRecords(Records):

    def heartbeat(self, host: str, at: datetime.datetime | None = None) -> Service:
        """Record that ``host``'s agent is alive (now, or ``at``)."""
        with db.transaction(self.engine) as conn:
            return heartbeat_in(conn, host, at)

    def set_forced_down(self, host: str, forced_down: bool) -> Service:
        """Mark a host down (or up again) whatever its heartbeat says; an
        operator does this to allow evacuating a host that is fenced."""
        return self._set(host, forced_down=forced_down)

    def set_disabled(self, host: str, disabled: bool, reason: str | None = None) -> Service:
        """Take a host out of scheduling (or back in); the reason is kept
        while it is disabled."""
        return self._set(host, disabled=disabled, disabled_reason=reason if disabled else None)

    def _set(self, host: str, **values: Any) -> Service:
        with db.transaction(self.engine) as conn:
            result = conn.execute(
                models.services.update().where(models.services.c.host == host).values(**values))
        if result.rowcount == 0:
            raise errors.ServiceNotFound(f"no service for host {host!r}")
        return self.get_service(host)

    def delete_service(self, host: str) -> None:
        """Forget a decommissioned host: its service and compute node records."""
        with db.transaction(self.engine) as conn:
            conn.execute(models.compute_nodes.delete().where(models.compute_nodes.c.host == host))
            result = conn.execute(models.services.delete().where(models.services.c.host == host))
        if result.rowcount == 0:
            raise errors.ServiceNotFound(f"no service for host {host!r}")

    def unschedulable_hosts(self, down_after: float) -> set[str]:
        """Hosts the scheduler must not pick: disabled, forced down, or
        without a heartbeat for ``down_after`` seconds."""
        now = utcnow()
        return {s.host for s in self.list_services()
                if s.disabled or s.forced_down
                or (now - s.last_seen).total_seconds() > down_after}

    def get_service(self, host: str) -> Service:
        return service_of(self._one(models.services.c.host, host, errors.ServiceNotFound,
                                  f"no service for host {host!r}"))

    def list_services(self) -> list[Service]:
        return self._all(sa.select(models.services).order_by(models.services.c.host), service_of)

    def is_host_up(
        self, host: str, down_after: float, now: datetime.datetime | None = None
    ) -> bool:
        """False if ``host`` is forced down, never reported, or last
        reported more than ``down_after`` seconds ago."""
        try:
            service = self.get_service(host)
        except errors.ServiceNotFound:
            return False
        if service.forced_down:
            return False
        age = (now or utcnow()) - service.last_seen
        return age.total_seconds() <= down_after


def service_of(row: Mapping[str, Any]) -> Service:
    return value(Service, row, forced_down=bool(row["forced_down"]),
                 disabled=bool(row["disabled"]))
