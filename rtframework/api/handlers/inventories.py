"""/resource_providers/{uuid}/inventories[/{resource_class}]."""

from __future__ import annotations

import webob
import webob.exc

from rtframework.api import errors, payload
from rtframework.api.handlers import common, query
from rtframework.placement import errors as perrors
from rtframework.placement import types as t

_MAX = t.MAX_INT
_RC = {"type": "string", "pattern": "^[A-Z0-9_]+$", "maxLength": 255}
_FIELDS = {
    "total": {"type": "integer", "maximum": _MAX, "minimum": 1},
    "reserved": {"type": "integer", "maximum": _MAX, "minimum": 0},
    "min_unit": {"type": "integer", "maximum": _MAX, "minimum": 1},
    "max_unit": {"type": "integer", "maximum": _MAX, "minimum": 1},
    "step_size": {"type": "integer", "maximum": _MAX, "minimum": 1},
    "allocation_ratio": {"type": "number", "maximum": 3.40282e38, "minimum": 0},
}
_GENERATION = {"type": "integer"}
_NAMES = tuple(_FIELDS)

_ONE = {"type": "object", "properties": {**_FIELDS, "resource_provider_generation": _GENERATION},
        "required": ["total", "resource_provider_generation"], "additionalProperties": False}
_POST = {"type": "object",
         "properties": {**_FIELDS, "resource_class": _RC,
                        "resource_provider_generation": _GENERATION},
         "required": ["total", "resource_class"],
         "additionalProperties": False}
PUT_ALL = {"type": "object", "properties": {
    "resource_provider_generation": _GENERATION,
    "inventories": {"type": "object", "patternProperties": {"^[A-Z0-9_]+$": {
        "type": "object", "properties": _FIELDS, "required": ["total"],
        "additionalProperties": False}}, "additionalProperties": False},
}, "required": ["resource_provider_generation", "inventories"], "additionalProperties": False}


def _inventory_json(inv: t.Inventory) -> dict:
    return {name: getattr(inv, name) for name in _NAMES}


def inventory_of(data: dict) -> t.Inventory:
    return t.Inventory(**{name: data[name] for name in _NAMES if name in data})


def _one_json(inv: t.Inventory, generation: int) -> dict:
    return {**_inventory_json(inv), "resource_provider_generation": generation}


def _all_json(invs: t.ProviderInventories) -> dict:
    return {"inventories": {rc: _inventory_json(inv) for rc, inv in invs.inventories.items()},
            "resource_provider_generation": invs.generation}


def _write_errors(uuid: str):
    """Backend write errors in Placement's words."""
    import contextlib

    @contextlib.contextmanager
    def mapping():
        try:
            yield
        except perrors.ProviderGenerationConflict as exc:
            raise common.generation_conflict(
                f"resource provider generation conflict: {exc}") from exc
        except perrors.InventoryInUse as exc:
            raise errors.http(webob.exc.HTTPConflict,
                              f"update conflict: Inventory for resource provider {uuid} "
                              f"in use: {exc}", code=errors.INVENTORY_INUSE) from exc
        except perrors.ResourceClassNotFound as exc:
            raise query.bad(f"Unknown resource class in inventory for resource provider "
                            f"{uuid}: {exc}") from exc
        except perrors.InvalidRequest as exc:
            raise query.bad(f"Unable to update inventory for resource provider {uuid}: "
                            f"{exc}") from exc
    return mapping()


def check_known(req, uuid: str, classes) -> None:
    known = set(common.backend(req).list_resource_classes())
    unknown = sorted(set(classes) - known)
    if unknown:
        raise query.bad(f"Unknown resource class in inventory for resource provider "
                        f"{uuid}: No such resource class {', '.join(unknown)}.")


def check_units(req: webob.Request, uuid: str, invs: dict[str, t.Inventory],
                doing: str = "update") -> None:
    """400 for reserved above total (at or above before 1.26) and for
    min_unit above max_unit."""
    equal_ok = common.version(req).at_least(26)
    for rc, inv in sorted(invs.items()):
        if inv.reserved > inv.total or (inv.reserved == inv.total and not equal_ok):
            raise query.bad(
                f"Unable to {doing} inventory for resource provider {uuid}: Invalid "
                f"inventory for '{rc}' on resource provider '{uuid}'. The reserved value "
                f"is greater than {'' if equal_ok else 'or equal to '}total.")
        if inv.min_unit > inv.max_unit:
            raise query.bad(
                f"Unable to {doing} inventory for resource provider {uuid}: Invalid "
                f"inventory for '{rc}' on resource provider '{uuid}'. The min_unit "
                "value is greater than max_unit.")


@common.handler("placement:resource_providers:inventories:list")
def list_inventories(req: webob.Request) -> webob.Response:
    uuid = common.path_uuid(req)
    common.existing_provider(req, uuid)
    return payload.json_response(req, _all_json(common.backend(req).get_inventories(uuid)))


@common.handler("placement:resource_providers:inventories:update")
def set_inventories(req: webob.Request) -> webob.Response:
    uuid = common.path_uuid(req)
    data = payload.json_body(req, PUT_ALL)
    rp = common.existing_provider(req, uuid)
    # A stale generation is reported before an unknown class, as Placement does.
    common.check_generation(rp.generation, data["resource_provider_generation"], uuid)
    invs = {rc: inventory_of(body) for rc, body in data["inventories"].items()}
    check_known(req, uuid, invs)
    check_units(req, uuid, invs)
    be = common.backend(req)
    with _write_errors(uuid):
        be.set_inventories(uuid, data["resource_provider_generation"], invs)
    return payload.json_response(req, _all_json(be.get_inventories(uuid)))


@common.handler("placement:resource_providers:inventories:delete", since=5,
                absent=webob.exc.HTTPMethodNotAllowed)
def delete_inventories(req: webob.Request) -> webob.Response:
    uuid = common.path_uuid(req)
    be = common.backend(req)
    current = common.existing_provider(req, uuid)
    with _write_errors(uuid):
        be.set_inventories(uuid, current.generation, {})
    return payload.no_content()


@common.handler("placement:resource_providers:inventories:create")
def create_inventory(req: webob.Request) -> webob.Response:
    uuid = common.path_uuid(req)
    data = payload.json_body(req, _POST)
    common.existing_provider(req, uuid)
    rc = data["resource_class"]
    inv = inventory_of(data)
    check_known(req, uuid, [rc])
    check_units(req, uuid, {rc: inv}, "create")
    be = common.backend(req)
    current = be.get_inventories(uuid)
    if rc in current.inventories:
        raise errors.http(webob.exc.HTTPConflict,
                          f"Update conflict: Inventory for {rc} on resource provider "
                          f"{uuid} already exists.")
    with _write_errors(uuid):
        generation = be.set_inventory(
            uuid, data.get("resource_provider_generation", current.generation), rc, inv)
    return payload.created(f"/resource_providers/{uuid}/inventories/{rc}",
                           _one_json(inv, generation), req)


def _one(req: webob.Request, uuid: str, rc: str, doing: str = "") -> tuple[t.Inventory, int]:
    invs = common.backend(req).get_inventories(uuid)
    if rc not in invs.inventories:
        where = f"found for {doing}" if doing else f"for {uuid}"
        raise errors.http(webob.exc.HTTPNotFound, f"No inventory of class {rc} {where}")
    return invs.inventories[rc], invs.generation


@common.handler("placement:resource_providers:inventories:show")
def show_inventory(req: webob.Request) -> webob.Response:
    uuid, rc = common.path_uuid(req), req.urlvars["resource_class"]
    common.existing_provider(req, uuid)
    inv, generation = _one(req, uuid, rc)
    return payload.json_response(req, _one_json(inv, generation))


@common.handler("placement:resource_providers:inventories:update")
def update_inventory(req: webob.Request) -> webob.Response:
    uuid, rc = common.path_uuid(req), req.urlvars["resource_class"]
    data = payload.json_body(req, _ONE)
    common.existing_provider(req, uuid)
    inv = inventory_of(data)
    check_known(req, uuid, [rc])
    check_units(req, uuid, {rc: inv})
    be = common.backend(req)
    if rc not in be.get_inventories(uuid).inventories:
        raise query.bad(f"No inventory record with resource class for resource provider "
                        f"{uuid}: {rc}")
    with _write_errors(uuid):
        generation = be.set_inventory(uuid, data["resource_provider_generation"], rc, inv)
    return payload.json_response(req, _one_json(inv, generation))


@common.handler("placement:resource_providers:inventories:delete")
def delete_inventory(req: webob.Request) -> webob.Response:
    uuid, rc = common.path_uuid(req), req.urlvars["resource_class"]
    rp = common.existing_provider(req, uuid)
    _one(req, uuid, rc, "delete")
    with _write_errors(uuid):
        common.backend(req).delete_inventory(uuid, rp.generation, rc)
    return payload.no_content()


ROUTES = {
    "/resource_providers/{uuid}/inventories": {
        "GET": list_inventories, "PUT": set_inventories, "POST": create_inventory,
        "DELETE": delete_inventories},
    "/resource_providers/{uuid}/inventories/{resource_class}": {
        "GET": show_inventory, "PUT": update_inventory, "DELETE": delete_inventory},
}
