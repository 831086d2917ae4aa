"""/resource_providers/{uuid}/aggregates: a list before 1.19, with the
provider generation (checked on PUT) from 1.19."""

from __future__ import annotations

import webob

from rtframework.api import payload
from rtframework.api.handlers import common
from rtframework.placement import errors as perrors

_UUIDS = {"type": "array", "items": {"type": "string", "format": "uuid"},
          "uniqueItems": True}
_PUT_119 = {"type": "object", "properties": {
    "aggregates": _UUIDS, "resource_provider_generation": {"type": "integer"}},
    "required": ["aggregates", "resource_provider_generation"], "additionalProperties": False}


def _answer(req: webob.Request, aggregates, generation: int) -> webob.Response:
    body: dict = {"aggregates": list(aggregates)}
    if common.version(req).at_least(19):
        body["resource_provider_generation"] = generation
    return payload.json_response(req, body)


@common.handler("placement:resource_providers:aggregates:list", since=1)
def list_aggregates(req: webob.Request) -> webob.Response:
    uuid = common.path_uuid(req)
    common.existing_provider(req, uuid)
    found = common.backend(req).get_provider_aggregates(uuid)
    return _answer(req, sorted(found.aggregates), found.generation)


@common.handler("placement:resource_providers:aggregates:update", since=1)
def set_aggregates(req: webob.Request) -> webob.Response:
    uuid = common.path_uuid(req)
    v = common.version(req)
    rp = common.existing_provider(req, uuid)
    data = payload.json_body(req, _PUT_119 if v.at_least(19) else _UUIDS)
    be = common.backend(req)
    if v.at_least(19):
        aggregates, generation = frozenset(data["aggregates"]), \
            data["resource_provider_generation"]
        common.check_generation(rp.generation, generation, uuid)
        bump = True
    else:
        # Before 1.19 the write names no generation and bumps none.
        aggregates, generation, bump = frozenset(data), rp.generation, False
    try:
        new = be.set_provider_aggregates(uuid, generation, aggregates, bump=bump)
    except perrors.ProviderGenerationConflict as exc:
        raise common.generation_conflict(str(exc)) from exc
    return _answer(req, data["aggregates"] if v.at_least(19) else data, new)


ROUTES = {"/resource_providers/{uuid}/aggregates": {"GET": list_aggregates,
                                                    "PUT": set_aggregates}}
