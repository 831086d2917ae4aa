"""/allocations/{consumer}, POST /allocations (1.13) and
/resource_providers/{uuid}/allocations.

Bodies by version: a list of ``{"resource_provider": {"uuid"},
"resources"}`` before 1.12, a dict by provider from 1.12; ``project_id``
and ``user_id`` required from 1.8; ``consumer_generation`` from 1.28
(before it a write replaces whatever the consumer holds);
``consumer_type`` from 1.38.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import webob
import webob.exc
from oslo_utils import uuidutils

from rtframework.api import errors, payload
from rtframework.api.handlers import common, query
from rtframework.placement import errors as perrors
from rtframework.placement import types as t

# Placement's [placement] incomplete_consumer_project_id / _user_id defaults.
INCOMPLETE_CONSUMER = "00000000-0000-0000-0000-000000000000"

_UUID = {"type": "string", "format": "uuid"}
_RESOURCES = {"type": "object", "minProperties": 1, "patternProperties": {
    "^[0-9A-Z_]+$": {"type": "integer", "minimum": 1}}, "additionalProperties": False}
_EXTERNAL_ID = {"type": "string", "minLength": 1, "maxLength": 255}
_CONSUMER_TYPE = {"type": "string", "pattern": "^[A-Z0-9_]+$", "minLength": 1,
                  "maxLength": 255}


def _allocations_schema(v, post: bool = False) -> dict:
    if not v.at_least(12):
        return {"type": "array", "minItems": 1, "items": {
            "type": "object", "properties": {
                "resource_provider": {"type": "object", "properties": {"uuid": _UUID},
                                      "required": ["uuid"], "additionalProperties": False},
                "resources": _RESOURCES},
            "required": ["resource_provider", "resources"], "additionalProperties": False}}
    entry = {"type": "object", "properties": {"resources": _RESOURCES,
                                              "generation": {"type": "integer"}},
             "required": ["resources"], "additionalProperties": False}
    schema = {"type": "object", "patternProperties": {
        "^[0-9a-fA-F-]{32,36}$": entry}, "additionalProperties": False}
    if not v.at_least(28) and not post:
        schema["minProperties"] = 1
    return schema


def consumer_schema(v, post: bool = False) -> dict:
    """One consumer's body; ``post`` (POST /allocations, /reshaper) may
    empty a consumer at any version."""
    props: dict = {"allocations": _allocations_schema(v, post)}
    required = ["allocations"]
    if v.at_least(8):
        props.update(project_id=_EXTERNAL_ID, user_id=_EXTERNAL_ID)
        required += ["project_id", "user_id"]
    if v.at_least(28):
        props["consumer_generation"] = {"type": ["integer", "null"]}
        required.append("consumer_generation")
    if v.at_least(34):
        # Which provider served which request group; Placement takes and
        # drops it (Nova sends it back from a candidate's mappings).
        props["mappings"] = {"type": "object", "minProperties": 1, "additionalProperties": {
            "type": "array", "minItems": 1, "items": _UUID}}
    if v.at_least(38):
        props["consumer_type"] = _CONSUMER_TYPE
        required.append("consumer_type")
    return {"type": "object", "properties": props, "required": required,
            "additionalProperties": False}


def _post_schema(v) -> dict:
    return {"type": "object", "minProperties": 1, "patternProperties": {
        "^[0-9a-fA-F-]{32,36}$": consumer_schema(v, post=True)},
        "additionalProperties": False}


def _by_provider(v, body) -> dict[str, dict[str, int]]:
    if not v.at_least(12):
        found: dict[str, dict[str, int]] = {}
        for entry in body:
            found.setdefault(entry["resource_provider"]["uuid"], {}).update(
                entry["resources"])
        return found
    return {rp: dict(entry["resources"]) for rp, entry in body.items()}


def write_of(req: webob.Request, v, consumer: str, data: dict) -> t.AllocationWrite:
    be = common.backend(req)
    allocations = _by_provider(v, data["allocations"])
    if v.at_least(28):
        generation = data["consumer_generation"]
    else:
        # Before consumer generations a write replaces what is there.
        generation = be.get_consumer_allocations(consumer).generation
    if v.at_least(38):
        consumer_type = data["consumer_type"]
    else:
        # Before 1.38 a write names no type: a known consumer keeps its
        # own, a new one has none (read back as "unknown").
        consumer_type = be.get_consumer_allocations(consumer).consumer_type
    return t.AllocationWrite(
        consumer_uuid=consumer, allocations=allocations,
        project_id=data.get("project_id", INCOMPLETE_CONSUMER),
        user_id=data.get("user_id", INCOMPLETE_CONSUMER),
        consumer_generation=generation, consumer_type=consumer_type)


def _check_providers(req: webob.Request, writes: list[t.AllocationWrite]) -> None:
    be = common.backend(req)
    for w in writes:
        for rp in w.allocations:
            try:
                be.get_provider(rp)
            except perrors.ProviderNotFound as exc:
                raise query.bad(f"Allocation for resource provider '{rp}' that does not "
                                "exist.", code=errors.PROVIDER_NOT_FOUND) from exc


def check_writes(req: webob.Request, writes: list[t.AllocationWrite],
                 planned: dict | None = None, *, many: bool = False) -> None:
    """400 for a provider or a resource class that does not exist, 409 for
    a class the provider has no inventory of (``planned``: provider ->
    classes it will have, for a reshape)."""
    _check_providers(req, writes)
    known = set(common.backend(req).list_resource_classes())
    for w in writes:
        for resources in w.allocations.values():
            for rc in sorted(set(resources) - known):
                whose = "" if many else f" for consumer {w.consumer_uuid}"
                raise query.bad(f"Unable to allocate inventory{whose}: "
                                f"No such resource class {rc}.")
    be = common.backend(req)
    for w in writes:
        for rp, resources in sorted(w.allocations.items()):
            has = planned[rp] if planned and rp in planned else \
                set(be.get_inventories(rp).inventories)
            for rc in sorted(set(resources) - set(has)):
                raise errors.http(webob.exc.HTTPConflict,
                                  f"Unable to allocate inventory: Inventory for '{rc}' on "
                                  f"resource provider '{rp}' invalid.")


@contextlib.contextmanager
def write_errors() -> Iterator[None]:
    """An allocation write's errors in Placement's words."""
    try:
        yield
    except perrors.ConsumerGenerationConflict as exc:
        raise common.generation_conflict(str(exc)) from exc
    except perrors.CapacityExceeded as exc:
        where = ""
        if exc.provider and exc.resource_class:
            where = (f"Unable to create allocation for '{exc.resource_class}' on resource "
                     f"provider '{exc.provider.split(' ', 1)[0]}'. ")
        raise errors.http(webob.exc.HTTPConflict, f"Unable to allocate inventory: {where}"
                          f"The requested amount would exceed the capacity. ({exc})") from exc
    except perrors.InvalidAllocation as exc:
        raise errors.http(webob.exc.HTTPConflict, f"Unable to allocate inventory: Inventory "
                          f"for the request is invalid: {exc}") from exc
    except perrors.ResourceClassNotFound as exc:
        raise query.bad(f"Unable to allocate inventory: {exc}") from exc


def _apply(req: webob.Request, writes: list[t.AllocationWrite], many: bool = False) -> None:
    check_writes(req, writes, many=many)
    with write_errors():
        common.backend(req).write_allocations(writes)


def _consumer_uuid(req: webob.Request) -> str:
    consumer = req.urlvars["consumer_uuid"]
    if not uuidutils.is_uuid_like(consumer):
        raise query.bad(f"Malformed consumer_uuid: {consumer}")
    return consumer


@common.handler("placement:allocations:list")
def show_allocations(req: webob.Request) -> webob.Response:
    v = common.version(req)
    consumer = req.urlvars["consumer_uuid"]
    be = common.backend(req)
    held = be.get_consumer_allocations(consumer) if uuidutils.is_uuid_like(consumer) \
        else t.ConsumerAllocations(consumer_uuid=consumer, allocations={})
    body: dict = {"allocations": {
        rp: {"generation": be.get_provider(rp).generation, "resources": dict(res)}
        for rp, res in held.allocations.items()}}
    if held.allocations and v.at_least(12):
        body["project_id"] = held.project_id
        body["user_id"] = held.user_id
    if held.allocations and v.at_least(28):
        body["consumer_generation"] = held.generation
    if held.allocations and v.at_least(38):
        body["consumer_type"] = held.consumer_type or "unknown"
    return payload.json_response(req, body)


@common.handler("placement:allocations:update")
def put_allocations(req: webob.Request) -> webob.Response:
    v = common.version(req)
    consumer = _consumer_uuid(req)
    data = payload.json_body(req, consumer_schema(v))
    _apply(req, [write_of(req, v, consumer, data)])
    return payload.no_content()


@common.handler("placement:allocations:manage", since=13)
def post_allocations(req: webob.Request) -> webob.Response:
    v = common.version(req)
    data = payload.json_body(req, _post_schema(v))
    writes = [write_of(req, v, consumer, body) for consumer, body in data.items()]
    _apply(req, writes, many=True)
    return payload.no_content()


@common.handler("placement:allocations:delete")
def delete_allocations(req: webob.Request) -> webob.Response:
    consumer = req.urlvars["consumer_uuid"]
    be = common.backend(req)
    if not uuidutils.is_uuid_like(consumer) or \
            not be.get_consumer_allocations(consumer).allocations:
        raise errors.http(webob.exc.HTTPNotFound,
                          f"No allocations for consumer '{consumer}'")
    be.delete_allocations(consumer)
    return payload.no_content()


@common.handler("placement:resource_providers:allocations:list")
def provider_allocations(req: webob.Request) -> webob.Response:
    uuid = common.path_uuid(req)
    rp = common.existing_provider(req, uuid)
    held = common.backend(req).get_provider_allocations(uuid)
    return payload.json_response(req, {
        "allocations": {c: {"resources": dict(res)} for c, res in held.items()},
        "resource_provider_generation": rp.generation})


ROUTES = {
    "/allocations": {"POST": post_allocations},
    "/allocations/{consumer_uuid}": {"GET": show_allocations, "PUT": put_allocations,
                                     "DELETE": delete_allocations},
    "/resource_providers/{uuid}/allocations": {"GET": provider_allocations},
}
