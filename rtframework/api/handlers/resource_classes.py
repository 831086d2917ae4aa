"""/resource_classes[/{name}] (1.2): standard and custom classes."""

from __future__ import annotations

import webob
import webob.exc

from rtframework.api import errors, payload
from rtframework.api.handlers import common, query
from rtframework.placement import errors as perrors
from rtframework.placement import validation

_CUSTOM = {"type": "string", "pattern": "^CUSTOM_[A-Z0-9_]+$", "maxLength": 255}
_BODY = {"type": "object", "properties": {"name": _CUSTOM}, "required": ["name"],
         "additionalProperties": False}


def _json(name: str) -> dict:
    return {"name": name, "links": [{"rel": "self", "href": f"/resource_classes/{name}"}]}


@common.handler("placement:resource_classes:list", since=2)
def list_classes(req: webob.Request) -> webob.Response:
    names = common.backend(req).list_resource_classes()
    return payload.json_response(req, {"resource_classes": [_json(n) for n in names]})


@common.handler("placement:resource_classes:create", since=2)
def create_class(req: webob.Request) -> webob.Response:
    name = payload.json_body(req, _BODY)["name"]
    be = common.backend(req)
    if name in be.list_resource_classes():
        raise errors.http(webob.exc.HTTPConflict,
                          f"Conflicting resource class already exists: {name}")
    be.ensure_resource_class(name)
    return payload.created(f"/resource_classes/{name}")


def _name(req: webob.Request) -> str:
    return req.urlvars["name"]


@common.handler("placement:resource_classes:show", since=2)
def show_class(req: webob.Request) -> webob.Response:
    name = _name(req)
    if name not in common.backend(req).list_resource_classes():
        raise errors.http(webob.exc.HTTPNotFound, f"No such resource class {name}.")
    return payload.json_response(req, _json(name))


@common.handler("placement:resource_classes:update", since=2)
def update_class(req: webob.Request) -> webob.Response:
    name = _name(req)
    be = common.backend(req)
    if not common.version(req).at_least(7):
        return _rename(req, name)
    payload.validate({"name": name}, _BODY)
    existed = name in be.list_resource_classes()
    be.ensure_resource_class(name)
    resp = payload.no_content(204 if existed else 201)
    resp.location = f"/resource_classes/{name}"
    if existed:
        payload.cache_headers(req, resp)
    return resp


def _rename(req: webob.Request, name: str) -> webob.Response:
    """1.2 to 1.6: PUT renames a custom class."""
    new_name = payload.json_body(req, _BODY)["name"]
    if name in validation.STANDARD_CLASSES:
        raise query.bad(f"Cannot update standard resource class {name}")
    try:
        common.backend(req).rename_resource_class(name, new_name)
    except perrors.ResourceClassNotFound as exc:
        raise errors.http(webob.exc.HTTPNotFound, f"No such resource class {name}.") from exc
    except perrors.Conflict as exc:
        raise errors.http(webob.exc.HTTPConflict,
                          f"Resource class already exists: {new_name}") from exc
    return payload.json_response(req, _json(new_name))


@common.handler("placement:resource_classes:delete", since=2)
def delete_class(req: webob.Request) -> webob.Response:
    name = _name(req)
    if name in validation.STANDARD_CLASSES:
        raise query.bad(f"Cannot delete standard resource class {name}")
    try:
        common.backend(req).delete_resource_class(name)
    except (perrors.ResourceClassNotFound, perrors.InvalidResourceClass) as exc:
        raise errors.http(webob.exc.HTTPNotFound, f"No such resource class {name}.") from exc
    except perrors.ResourceClassInUse as exc:
        raise errors.http(webob.exc.HTTPConflict,
                          f"Error in delete resource class '{name}': Class is in use in "
                          "inventory") from exc
    return payload.no_content()


ROUTES = {
    "/resource_classes": {"GET": list_classes, "POST": create_class},
    "/resource_classes/{name}": {"GET": show_class, "PUT": update_class,
                                 "DELETE": delete_class},
}
