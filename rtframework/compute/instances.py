"""Instance records: create, read, find by name, list, compare-and-swap update."""

from __future__ import annotations

import uuid as uuidlib
from collections.abc import Iterable, Mapping
from typing import Any

import sqlalchemy as sa

from rtframework import db
from rtframework.compute import errors, models, records
from rtframework.compute import values as v
from rtframework.compute.values import Flavor, Instance

_FIELDS = frozenset({
    "name", "project_id", "user_id", "flavor", "host", "node", "vm_state", "task_state",
})


class InstanceRecords(records.Records):

    def create_instance(
        self,
        name: str,
        flavor: Flavor,
        *,
        project_id: str,
        user_id: str,
        host: str | None = None,
        node: str | None = None,
        vm_state: str = v.BUILDING,
        task_state: str | None = None,
        uuid: str | None = None,
    ) -> Instance:
        records.check_choice("vm_state", vm_state, v.VM_STATES)
        now = records.now()
        row = {
            "uuid": uuid or str(uuidlib.uuid4()),
            "name": name,
            "project_id": project_id,
            "user_id": user_id,
            "flavor_name": flavor.name,
            "flavor_resources": dict(flavor.resources),
            "host": host,
            "node": node,
            "vm_state": vm_state,
            "task_state": task_state,
            "created_at": now,
            "updated_at": now,
        }
        self._insert(models.instances, row)
        return _instance(row)

    def get_instance(self, uuid: str) -> Instance:
        return _instance(self._one(models.instances.c.uuid, uuid, errors.InstanceNotFound,
                                   f"instance {uuid} not found"))

    def lookup_instance(self, ref: str) -> Instance:
        """An instance by uuid, or by name when exactly one has it."""
        table = models.instances
        rows = self._all(sa.select(table).where(sa.or_(table.c.uuid == ref, table.c.name == ref)),
                         dict)
        by_uuid = [r for r in rows if r["uuid"] == ref]
        if by_uuid:
            return _instance(by_uuid[0])
        live = [r for r in rows if r["vm_state"] != v.DELETED] or rows
        if not live:
            raise errors.InstanceNotFound(f"no instance with uuid or name {ref!r}")
        if len(live) > 1:
            raise errors.AmbiguousInstance(
                f"{len(live)} instances are named {ref!r}; use a uuid: "
                + ", ".join(r["uuid"] for r in live)
            )
        return _instance(live[0])

    def purge_instance(self, uuid: str) -> None:
        """Forget an instance record entirely: only for a boot that never
        claimed anything (instances that existed are marked DELETED)."""
        with db.transaction(self.engine) as conn:
            conn.execute(models.instances.delete().where(models.instances.c.uuid == uuid))

    def instance_flavor(self, uuid: str) -> Flavor:
        """The flavor an instance currently claims."""
        return self.get_instance(uuid).flavor

    def list_instances(
        self,
        *,
        host: str | None = None,
        node: str | None = None,
        vm_states: Iterable[str] | None = None,
        uuids: Iterable[str] | None = None,
    ) -> list[Instance]:
        table = models.instances
        return self._all(records.filtered(
            sa.select(table).order_by(table.c.created_at, table.c.uuid),
            equal={table.c.host: host, table.c.node: node},
            among={table.c.vm_state: vm_states, table.c.uuid: uuids}), _instance)

    def instance_uuids(self, *, host: str, vm_state_not: str | None = None) -> list[str]:
        """uuids of the instances on ``host`` (not in ``vm_state_not``):
        list_instances without building a record per row."""
        table = models.instances
        query = sa.select(table.c.uuid).where(table.c.host == host)
        if vm_state_not is not None:
            query = query.where(table.c.vm_state != vm_state_not)
        with db.read(self.engine) as conn:
            return list(conn.execute(query).scalars())

    def update_instance(
        self,
        uuid: str,
        *,
        expected_vm_state: Any = records.ANY,
        expected_task_state: Any = records.ANY,
        expected_host: Any = records.ANY,
        **fields: Any,
    ) -> Instance:
        """Change ``fields`` of an instance, if it still has the expected
        vm_state / task_state / host (each a value or a collection of
        values); StateConflict otherwise, naming what it found.

        Fields: name, project_id, user_id, flavor (a Flavor), host, node,
        vm_state, task_state.
        """
        records.check_fields("instance", fields, _FIELDS)
        records.check_choice("vm_state", fields.get("vm_state"), v.VM_STATES)
        values = dict(fields)
        if "flavor" in values:
            flavor = values.pop("flavor")
            values["flavor_name"] = flavor.name
            values["flavor_resources"] = dict(flavor.resources)
        expected = {"vm_state": expected_vm_state, "task_state": expected_task_state,
                    "host": expected_host}
        return _instance(self._compare_and_swap(models.instances, uuid, expected, values,
                                                "instance", errors.InstanceNotFound))


def _instance(row: Mapping[str, Any]) -> Instance:
    return records.value(Instance, row, flavor=Flavor(
        row["flavor_name"], {k: int(a) for k, a in row["flavor_resources"].items()}))
