"""What every handler needs: the backend, the policy check, the version,
uuids from the path, and Placement's shapes of common objects."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import webob
import webob.exc
from oslo_utils import uuidutils

from rtframework.api import auth, errors, microversion, payload
from rtframework.placement import backend as contract
from rtframework.placement import types as t


def backend(req: webob.Request) -> contract.PlacementBackend:
    return req.environ["rtframework.api.backend"]


def version(req: webob.Request) -> microversion.Version:
    return microversion.of(req.environ)


def authorize(req: webob.Request, action: str, target: dict | None = None) -> None:
    ctx = req.environ[auth.CONTEXT_KEY]
    req.environ["rtframework.api.policy"].authorize(ctx, action, target)


def handler(action: str | None, *, since: int = 0, until: int | None = None,
            accept: bool = True, absent: type = webob.exc.HTTPNotFound) -> Callable:
    """A handler served from 1.``since`` (to 1.``until``), ``absent`` (404,
    or 405 for a method of a path older versions have) otherwise, as
    Placement does; ``action`` is its policy rule."""
    def wrap(func):
        @functools.wraps(func)
        def serve(req: webob.Request) -> webob.Response:
            v = version(req)
            if not v.at_least(since) or (until is not None and v.at_least(until + 1)):
                raise errors.http(absent)
            if action is not None:
                authorize(req, action)
            if accept and req.method == "GET":
                payload.check_accept(req)
            with errors.translated():
                return func(req)
        return serve
    return wrap


def path_uuid(req: webob.Request, key: str = "uuid") -> str:
    return req.urlvars[key]


def provider_links(uuid: str, v: microversion.Version) -> list[dict[str, str]]:
    base = f"/resource_providers/{uuid}"
    links = [{"rel": "self", "href": base},
             {"rel": "inventories", "href": f"{base}/inventories"},
             {"rel": "usages", "href": f"{base}/usages"}]
    if v.at_least(1):
        links.append({"rel": "aggregates", "href": f"{base}/aggregates"})
    if v.at_least(6):
        links.append({"rel": "traits", "href": f"{base}/traits"})
    if v.at_least(11):
        links.append({"rel": "allocations", "href": f"{base}/allocations"})
    return links


def provider_json(rp: t.ResourceProvider, v: microversion.Version) -> dict[str, Any]:
    body: dict[str, Any] = {"uuid": rp.uuid, "name": rp.name, "generation": rp.generation,
                            "links": provider_links(rp.uuid, v)}
    if v.at_least(14):
        body["parent_provider_uuid"] = rp.parent_uuid
        body["root_provider_uuid"] = rp.root_uuid
    return body


def not_found_provider(uuid: str) -> webob.exc.HTTPException:
    return errors.http(webob.exc.HTTPNotFound, f"No resource provider with uuid {uuid} found")


def existing_provider(req: webob.Request, uuid: str) -> t.ResourceProvider:
    """The provider at ``uuid`` (404 naming it as Placement does)."""
    if not uuidutils.is_uuid_like(uuid):
        raise not_found_provider(uuid)
    from rtframework.placement import errors as perrors
    try:
        return backend(req).get_provider(uuid)
    except perrors.ProviderNotFound as exc:
        raise not_found_provider(uuid) from exc


def generation_conflict(detail: str) -> webob.exc.HTTPException:
    return errors.http(webob.exc.HTTPConflict, detail, code=errors.CONCURRENT_UPDATE)


def check_generation(rp_generation: int, given: int, uuid: str) -> None:
    if rp_generation != given:
        raise generation_conflict(
            "resource provider generation conflict: Resource provider's generation already "
            "changed. Please update the generation and try again. (provider "
            f"{uuid} is at generation {rp_generation}, the request names {given})")
