"""/resource_providers/{uuid}/usages and /usages (1.9; by consumer type 1.38)."""

from __future__ import annotations

import webob

from rtframework.api import payload
from rtframework.api.handlers import common, query


@common.handler("placement:resource_providers:usages")
def provider_usages(req: webob.Request) -> webob.Response:
    uuid = common.path_uuid(req)
    rp = common.existing_provider(req, uuid)
    usages = common.backend(req).get_provider_usages(uuid)
    return payload.json_response(req, {"usages": usages,
                                       "resource_provider_generation": rp.generation})


def total_usages(req: webob.Request) -> webob.Response:
    v = common.version(req)
    if not v.at_least(9):
        raise common.errors.http(common.webob.exc.HTTPNotFound)
    keys = ["project_id", "user_id"] + (["consumer_type"] if v.at_least(38) else [])
    query.check_keys(req, keys)
    _ID = {"type": "string", "minLength": 1, "maxLength": 255}
    payload.validate(dict(req.GET), {
        "type": "object", "properties": {"project_id": _ID, "user_id": _ID,
                                         "consumer_type": {"type": "string"}},
        "required": ["project_id"]}, prefix="Invalid query string parameters")
    project_id = query.single(req, "project_id")
    common.authorize(req, "placement:usages", {"project_id": project_id})
    common.payload.check_accept(req)
    user_id = query.single(req, "user_id")
    be = common.backend(req)
    with common.errors.translated():
        if not v.at_least(38):
            usages = be.get_project_usages(project_id, user_id)
            return payload.json_response(req, {"usages": usages})
        by_type = be.get_project_usages_by_type(project_id, user_id,
                                                query.single(req, "consumer_type"))
    return payload.json_response(req, {"usages": by_type})


ROUTES = {
    "/resource_providers/{uuid}/usages": {"GET": provider_usages},
    "/usages": {"GET": total_usages},
}
