"""Compute node records: the nodes each host reports, and their root providers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa

from rtframework import db
from rtframework.compute import errors, models
from rtframework.compute.records import Records, now, upsert, value
from rtframework.compute.values import ComputeNode


def upsert_node(conn: sa.Connection, uuid: str, host: str, nodename: str, driver: str) -> None:
    """Create or refresh a node's record in the transaction of ``conn``."""
    stamp = now()
    upsert(conn, models.compute_nodes, {"uuid": uuid},
           {"host": host, "nodename": nodename, "driver": driver, "updated_at": stamp},
           {"created_at": stamp})


class ComputeNodeRecords(Records):

    def record_compute_node(self, uuid: str, host: str, nodename: str, driver: str) -> ComputeNode:
        """Create or refresh the record of a node this host reports."""
        with db.transaction(self.engine) as conn:
            upsert_node(conn, uuid, host, nodename, driver)
            row = conn.execute(
                sa.select(models.compute_nodes).where(models.compute_nodes.c.uuid == uuid)
            ).mappings().one()
        return compute_node_of(row)

    def list_compute_nodes(self, *, host: str | None = None) -> list[ComputeNode]:
        return self._all(select_compute_nodes(host), compute_node_of)

    def node_root_uuid(self, host: str, nodename: str) -> str:
        """Root resource provider uuid of node ``nodename`` of ``host``."""
        table = models.compute_nodes
        with db.read(self.engine) as conn:
            found = conn.execute(
                sa.select(table.c.uuid).where(table.c.host == host, table.c.nodename == nodename)
            ).scalar()
        if found is None:
            raise errors.ComputeNodeNotFound(f"host {host!r} reports no node {nodename!r}")
        return found

    def delete_compute_node(self, uuid: str) -> None:
        with db.transaction(self.engine) as conn:
            conn.execute(models.compute_nodes.delete().where(models.compute_nodes.c.uuid == uuid))


def select_compute_nodes(host: str | None = None) -> sa.Select:
    """The query of :meth:`ComputeNodeRecords.list_compute_nodes` (every host's
    nodes when ``host`` is None)."""
    table = models.compute_nodes
    query = sa.select(table).order_by(table.c.host, table.c.nodename)
    if host is not None:
        query = query.where(table.c.host == host)
    return query


def compute_node_of(row: Mapping[str, Any]) -> ComputeNode:
    return value(ComputeNode, row)
