"""The records of one periodic pass of a host, written and read in one
transaction (one connection checkout, one commit): its heartbeat, the
nodes it reports, its instances' states, the unfinished migrations and
its compute nodes."""

from __future__ import annotations

from collections.abc import Mapping

import sqlalchemy as sa

from rtframework import db
from rtframework.compute import models
from rtframework.compute import values as v
from rtframework.compute.migration_records import migration_of, select_migrations
from rtframework.compute.nodes import compute_node_of, select_compute_nodes, upsert_node
from rtframework.compute.records import Records
from rtframework.compute.services import heartbeat_in
from rtframework.compute.values import HostRecords, InstanceState


class HostPassRecords(Records):

    def heartbeat_and_records(self, host: str, nodes: Mapping[str, str] | None = None,
                              driver: str = "") -> HostRecords:
        """The heartbeat of one periodic pass, the records of the nodes it
        reports (``nodes``: name -> root provider uuid, recorded as
        :meth:`record_compute_node` does) and the records the pass reads:
        the host's service, the instances recorded on it (owner and states
        only), the unfinished migrations and the host's compute nodes."""
        instances = models.instances
        with db.transaction(self.engine) as conn:
            service = heartbeat_in(conn, host, None)
            for nodename, uuid in (nodes or {}).items():
                upsert_node(conn, uuid, host, nodename, driver)
            states = {
                uuid: InstanceState(uuid, owner, vm_state, task_state)
                for uuid, owner, vm_state, task_state in conn.execute(
                    sa.select(instances.c.uuid, instances.c.host, instances.c.vm_state,
                              instances.c.task_state)
                    .where(instances.c.host == host))
            }
            moving = tuple(migration_of(r) for r in conn.execute(
                select_migrations(statuses=v.UNFINISHED_MIGRATION_STATUSES)).mappings())
            recorded = tuple(compute_node_of(r) for r in conn.execute(
                select_compute_nodes(host)).mappings())
        return HostRecords(service, states, moving, recorded)
