"""POST /reshaper (1.30): inventories and allocations replaced at once."""

from __future__ import annotations

import webob
import webob.exc

from rtframework.api import errors, payload
from rtframework.api.handlers import allocations, common, inventories, query
from rtframework.placement import errors as perrors
from rtframework.placement import types as t


def _schema(v) -> dict:
    return {"type": "object", "properties": {
        "inventories": {"type": "object", "patternProperties": {
            "^[0-9a-fA-F-]{32,36}$": inventories.PUT_ALL}, "additionalProperties": False},
        "allocations": {"type": "object", "patternProperties": {
            "^[0-9a-fA-F-]{32,36}$": allocations.consumer_schema(v, post=True)},
            "additionalProperties": False},
    }, "required": ["inventories", "allocations"], "additionalProperties": False}


@common.handler("placement:reshaper:reshape", since=30)
def reshape(req: webob.Request) -> webob.Response:
    v = common.version(req)
    data = payload.json_body(req, _schema(v))
    be = common.backend(req)
    new: dict[str, t.ProviderInventories] = {}
    for uuid, body in data["inventories"].items():
        try:
            be.get_provider(uuid)
        except perrors.ProviderNotFound as exc:
            raise query.bad(f"Resource provider {uuid} in inventories not found",
                            code=errors.PROVIDER_NOT_FOUND) from exc
        invs = {rc: inventories.inventory_of(fields)
                for rc, fields in body["inventories"].items()}
        inventories.check_known(req, uuid, invs)
        inventories.check_units(req, uuid, invs)
        new[uuid] = t.ProviderInventories(generation=body["resource_provider_generation"],
                                          inventories=invs)
    writes = [allocations.write_of(req, v, consumer, body)
              for consumer, body in data["allocations"].items()]
    allocations.check_writes(req, writes, {rp: set(p.inventories) for rp, p in new.items()},
                             many=True)
    with allocations.write_errors():
        try:
            be.reshape(new, writes)
        except perrors.ProviderGenerationConflict as exc:
            actual = {uuid: be.get_provider(uuid).generation for uuid in new}
            stale = sorted(u for u in new if new[u].generation != actual[u])
            detail = "; ".join(f"{u}: actual: {actual[u]}, given: {new[u].generation}"
                               for u in stale) or str(exc)
            raise common.generation_conflict(
                f"resource provider generation conflict: {detail}") from exc
        except perrors.InventoryInUse as exc:
            raise errors.http(webob.exc.HTTPConflict, f"update conflict: {exc}",
                              code=errors.INVENTORY_INUSE) from exc
    return payload.no_content()


ROUTES = {"/reshaper": {"POST": reshape}}
