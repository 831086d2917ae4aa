"""/traits[/{name}] (1.6) and /resource_providers/{uuid}/traits."""

from __future__ import annotations

import webob
import webob.exc

from rtframework.api import errors, payload
from rtframework.api.handlers import common, query
from rtframework.placement import errors as perrors
from rtframework.placement import validation

_PUT_RP = {"type": "object", "properties": {
    "traits": {"type": "array", "items": {"type": "string", "pattern": "^[A-Z0-9_]+$",
                                          "maxLength": 255}, "uniqueItems": True},
    "resource_provider_generation": {"type": "integer"}},
    "required": ["traits", "resource_provider_generation"], "additionalProperties": False}


@common.handler("placement:traits:list", since=6)
def list_traits(req: webob.Request) -> webob.Response:
    query.check_keys(req, ["name", "associated"])
    names = common.backend(req).list_traits()
    name = query.single(req, "name")
    if name is not None:
        if name.startswith("in:"):
            wanted = set(name[3:].split(","))
            names = [n for n in names if n in wanted]
        elif name.startswith("startswith:"):
            names = [n for n in names if n.startswith(name[len("startswith:"):])]
        else:
            raise query.bad("Badly formatted name parameter. Expected name query string "
                            "parameter in form: ?name=[in|startswith]:[name1,name2|prefix]. "
                            f"Got: \"{name}\"")
    associated = query.single(req, "associated")
    if associated is not None:
        if associated.lower() not in ("true", "false"):
            raise query.bad('The query parameter "associated" only accepts "true" or '
                            '"false"')
        wanted = set(common.backend(req).list_traits(
            associated=associated.lower() == "true"))
        names = [n for n in names if n in wanted]
    return payload.json_response(req, {"traits": sorted(names)})


def _name(req: webob.Request) -> str:
    return req.urlvars["name"]


@common.handler("placement:traits:show", since=6)
def show_trait(req: webob.Request) -> webob.Response:
    name = _name(req)
    if name not in common.backend(req).list_traits():
        raise errors.http(webob.exc.HTTPNotFound, f"No such trait(s): {name}")
    resp = payload.no_content()
    payload.cache_headers(req, resp)
    return resp


@common.handler("placement:traits:update", since=6)
def create_trait(req: webob.Request) -> webob.Response:
    name = _name(req)
    if not name.startswith(validation.CUSTOM_PREFIX):
        raise query.bad("The trait is invalid. A valid trait must be no longer than 255 "
                        "characters, start with the prefix \"CUSTOM_\" and use following "
                        "characters: \"A\"-\"Z\", \"0\"-\"9\" and \"_\"")
    try:
        validation.check_trait_name(name)
    except perrors.InvalidTrait as exc:
        raise query.bad("The trait is invalid. A valid trait must be no longer than 255 "
                        "characters, start with the prefix \"CUSTOM_\" and use following "
                        "characters: \"A\"-\"Z\", \"0\"-\"9\" and \"_\"") from exc
    be = common.backend(req)
    existed = name in be.list_traits(prefix=name)
    be.ensure_trait(name)
    resp = payload.no_content(204 if existed else 201)
    resp.location = f"/traits/{name}"
    payload.cache_headers(req, resp)
    return resp


@common.handler("placement:traits:delete", since=6)
def delete_trait(req: webob.Request) -> webob.Response:
    name = _name(req)
    if name in validation.STANDARD_TRAITS:
        raise query.bad(f"Cannot delete standard trait {name}.")
    try:
        common.backend(req).delete_trait(name)
    except perrors.TraitNotFound as exc:
        raise errors.http(webob.exc.HTTPNotFound, f"No such trait(s): {name}") from exc
    except perrors.TraitInUse as exc:
        raise errors.http(webob.exc.HTTPConflict,
                          f"The trait {name} is in use by a resource provider.") from exc
    return payload.no_content()


def _rp_answer(req: webob.Request, traits, generation: int) -> webob.Response:
    return payload.json_response(req, {"traits": sorted(traits),
                                       "resource_provider_generation": generation})


@common.handler("placement:resource_providers:traits:list", since=6)
def list_provider_traits(req: webob.Request) -> webob.Response:
    uuid = common.path_uuid(req)
    common.existing_provider(req, uuid)
    found = common.backend(req).get_provider_traits(uuid)
    return _rp_answer(req, found.traits, found.generation)


@common.handler("placement:resource_providers:traits:update", since=6)
def set_provider_traits(req: webob.Request) -> webob.Response:
    uuid = common.path_uuid(req)
    data = payload.json_body(req, _PUT_RP)
    rp = common.existing_provider(req, uuid)
    common.check_generation(rp.generation, data["resource_provider_generation"], uuid)
    be = common.backend(req)
    known = set(be.list_traits())
    unknown = sorted(set(data["traits"]) - known)
    if unknown:
        raise query.bad(f"No such trait(s): {', '.join(unknown)}")
    try:
        new = be.set_provider_traits(uuid, rp.generation, frozenset(data["traits"]))
    except perrors.ProviderGenerationConflict as exc:
        raise common.generation_conflict(str(exc)) from exc
    return _rp_answer(req, data["traits"], new)


@common.handler("placement:resource_providers:traits:delete", since=6)
def delete_provider_traits(req: webob.Request) -> webob.Response:
    uuid = common.path_uuid(req)
    rp = common.existing_provider(req, uuid)
    try:
        common.backend(req).set_provider_traits(uuid, rp.generation, frozenset())
    except perrors.ProviderGenerationConflict as exc:
        raise common.generation_conflict(str(exc)) from exc
    return payload.no_content()


ROUTES = {
    "/traits": {"GET": list_traits},
    "/traits/{name}": {"GET": show_trait, "PUT": create_trait, "DELETE": delete_trait},
    "/resource_providers/{uuid}/traits": {"GET": list_provider_traits,
                                          "PUT": set_provider_traits,
                                          "DELETE": delete_provider_traits},
}
