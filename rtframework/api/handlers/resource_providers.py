"""/resource_providers and /resource_providers/{uuid}."""

from __future__ import annotations

import uuid as uuidlib

import webob
import webob.exc

from rtframework.api import errors, microversion, payload
from rtframework.api.handlers import common, query
from rtframework.placement import errors as perrors
from rtframework.placement import types as t

_UUID = {"type": "string", "format": "uuid"}
_NAME = {"type": "string", "minLength": 1, "maxLength": 200}


def _schema(v, *, create: bool) -> dict:
    props = {"name": _NAME}
    if create:
        props["uuid"] = _UUID
    if v.at_least(14):
        props["parent_provider_uuid"] = {"anyOf": [_UUID, {"type": "null"}]}
    return {"type": "object", "properties": props, "required": ["name"],
            "additionalProperties": False}


def rp_uuid(text: str) -> str:
    """A uuid as Placement writes it (dashed, lower case)."""
    return str(uuidlib.UUID(text))


# Query keys of GET /resource_providers and the minor version each came in.
_LIST_KEYS_SINCE = (("name", 0), ("uuid", 0), ("member_of", 3), ("resources", 4),
                    ("in_tree", 14), ("required", 18))


def _list_keys(v) -> list[str]:
    return microversion.keys_at(v, _LIST_KEYS_SINCE)


@common.handler("placement:resource_providers:list")
def list_providers(req: webob.Request) -> webob.Response:
    v = common.version(req)
    query.check_keys(req, _list_keys(v))
    uuid = query.single(req, "uuid")
    if uuid is not None and not common.uuidutils.is_uuid_like(uuid):
        raise query.invalid_query(f"Failed validating 'format' in schema: '{uuid}' is not "
                                  "a 'uuid'")
    traits = query.traits(req.GET.getall("required"), v) if "required" in req.GET \
        else query.Traits()
    member_of, forbidden_aggs = query.member_of(req.GET.getall("member_of"), v)
    resources = query.resources(req.GET["resources"]) if "resources" in req.GET else {}
    in_tree = query.in_tree(req.GET["in_tree"]) if "in_tree" in req.GET else None
    be = common.backend(req)
    _check_classes(be, resources)
    _check_traits(be, traits.required | traits.forbidden | set().union(*traits.any_of))
    try:
        found = be.list_providers(t.ProviderQuery(
            uuid=uuid, name=query.single(req, "name"), in_tree=in_tree, member_of=member_of,
            required_traits=frozenset(traits.required),
            forbidden_traits=frozenset(traits.forbidden), resources=resources))
    except perrors.ProviderNotFound:
        found = []
    if forbidden_aggs:
        found = [rp for rp in found
                 if not be.get_provider_aggregates(rp.uuid).aggregates & forbidden_aggs]
    for any_of in traits.any_of:
        found = [rp for rp in found if be.get_provider_traits(rp.uuid).traits & any_of]
    return payload.json_response(
        req, {"resource_providers": [common.provider_json(rp, v) for rp in found]})


def _check_classes(be, resources) -> None:
    if not resources:
        return
    known = set(be.list_resource_classes())
    unknown = sorted(set(resources) - known)
    if unknown:
        raise query.bad("Invalid resource class in resources parameter: No such resource "
                        f"class {unknown[0]}.")


def _check_traits(be, names: set[str]) -> None:
    if not names:
        return
    unknown = sorted(n for n in names if n not in set(be.list_traits()))
    if unknown:
        raise query.bad(f"No such trait(s): {', '.join(unknown)}.")


@common.handler("placement:resource_providers:create")
def create_provider(req: webob.Request) -> webob.Response:
    v = common.version(req)
    data = payload.json_body(req, _schema(v, create=True))
    uuid = data.get("uuid")
    parent = data.get("parent_provider_uuid")
    if parent is not None and uuid is not None and parent == uuid:
        raise query.bad(f"Unable to create resource provider \"{data['name']}\", {uuid}: "
                        "parent provider UUID cannot be same as UUID. Please set parent "
                        "provider UUID to None if there is no parent.")
    be = common.backend(req)
    if parent is not None:
        try:
            be.get_provider(parent)
        except perrors.ProviderNotFound as exc:
            raise query.bad(f"Unable to create resource provider \"{data['name']}\", "
                            f"{uuid}: parent provider UUID does not exist.") from exc
    try:
        rp = be.create_provider(data["name"], uuid=uuid, parent_uuid=parent)
    except perrors.DuplicateName as exc:
        raise errors.http(webob.exc.HTTPConflict,
                          f"Conflicting resource provider name: {data['name']} already "
                          "exists.", code=errors.DUPLICATE_NAME) from exc
    except perrors.DuplicateUUID as exc:
        raise errors.http(webob.exc.HTTPConflict,
                          f"Conflicting resource provider uuid: {rp_uuid(uuid)} already "
                          "exists.", code=errors.DUPLICATE_NAME) from exc
    location = f"/resource_providers/{rp.uuid}"
    if v.at_least(20):
        resp = payload.json_response(req, common.provider_json(rp, v))
        resp.location = location
        return resp
    return payload.created(location)


@common.handler("placement:resource_providers:show")
def show_provider(req: webob.Request) -> webob.Response:
    rp = common.existing_provider(req, common.path_uuid(req))
    return payload.json_response(req, common.provider_json(rp, common.version(req)))


@common.handler("placement:resource_providers:update")
def update_provider(req: webob.Request) -> webob.Response:
    v = common.version(req)
    uuid = common.path_uuid(req)
    data = payload.json_body(req, _schema(v, create=False))
    rp = common.existing_provider(req, uuid)
    be = common.backend(req)
    parent = data.get("parent_provider_uuid", rp.parent_uuid)
    if "parent_provider_uuid" in data and parent != rp.parent_uuid:
        if parent is None and not v.at_least(37):
            raise query.bad("un-parenting a provider is not currently allowed")
        if rp.parent_uuid is not None and not v.at_least(37):
            raise query.bad("re-parenting a provider is not currently allowed")
        if parent == uuid:
            raise query.bad("creating loop in the provider tree is not allowed.")
        if parent is not None:
            try:
                be.get_provider(parent)
            except perrors.ProviderNotFound as exc:
                raise query.bad("parent provider UUID does not exist.") from exc
    try:
        rp = be.update_provider(uuid, name=data["name"],
                                parent_uuid=parent if parent != rp.parent_uuid else None,
                                detach=parent is None and rp.parent_uuid is not None)
    except perrors.DuplicateName as exc:
        raise errors.http(webob.exc.HTTPConflict,
                          f"Conflicting resource provider name: {data['name']} already "
                          "exists.", code=errors.DUPLICATE_NAME) from exc
    except perrors.InvalidRequest as exc:
        raise query.bad(f"creating loop in the provider tree is not allowed. {exc}") from exc
    return payload.json_response(req, common.provider_json(rp, v))


@common.handler("placement:resource_providers:delete")
def delete_provider(req: webob.Request) -> webob.Response:
    uuid = common.path_uuid(req)
    try:
        common.backend(req).delete_provider(uuid)
    except perrors.ProviderNotFound as exc:
        raise errors.http(webob.exc.HTTPNotFound,
                          f"No resource provider with uuid {uuid} found for delete") from exc
    except perrors.ProviderInUse as exc:
        raise errors.http(webob.exc.HTTPConflict,
                          f"Unable to delete resource provider {uuid}: Resource provider "
                          "has allocations.", code=errors.PROVIDER_INUSE) from exc
    except perrors.CannotDeleteParent as exc:
        raise errors.http(webob.exc.HTTPConflict,
                          f"Unable to delete parent resource provider {uuid}: It has "
                          "child resource providers.",
                          code=errors.PROVIDER_CANNOT_DELETE_PARENT) from exc
    return payload.no_content()


ROUTES = {
    "/resource_providers": {"GET": list_providers, "POST": create_provider},
    "/resource_providers/{uuid}": {"GET": show_provider, "PUT": update_provider,
                                   "DELETE": delete_provider},
}
