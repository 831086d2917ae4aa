"""Placement's error answers and the mapping of backend errors onto them.

Every error is a ``webob.exc`` exception rendered as Placement renders
it: ``{"errors": [{"status", "title", "detail", "request_id"}]}``, plus
``code`` from microversion 1.23 (``placement.undefined_code`` when the
error has no more specific one).
"""

from __future__ import annotations

import contextlib
import functools
import re
from collections.abc import Iterator

import webob
import webob.exc
from oslo_middleware import request_id

from rtframework.api import microversion
from rtframework.placement import errors

_BREAK = re.compile(r"<br ?/>")

UNDEFINED = "placement.undefined_code"
CONCURRENT_UPDATE = "placement.concurrent_update"
DUPLICATE_NAME = "placement.duplicate_name"
INVENTORY_INUSE = "placement.inventory.inuse"
PROVIDER_INUSE = "placement.resource_provider.inuse"
PROVIDER_CANNOT_DELETE_PARENT = "placement.resource_provider.cannot_delete_parent"
PROVIDER_NOT_FOUND = "placement.resource_provider.not_found"
QUERY_BAD_VALUE = "placement.query.bad_value"
QUERY_DUPLICATE_KEY = "placement.query.duplicate_key"
QUERY_MISSING_VALUE = "placement.query.missing_value"


def _formatter(body: str, status: str, title: str, environ: dict, *, code: str) -> dict:
    error = {
        "status": int(status.split()[0]),
        "title": title,
        "detail": _BREAK.sub("", body),
        "request_id": environ.get(request_id.ENV_REQUEST_ID),
    }
    if microversion.of(environ).at_least(23):
        error["code"] = code
    return {"errors": [error]}


def http(cls: type[webob.exc.WSGIHTTPException], detail: str | None = None, *,
         code: str = UNDEFINED, **kwargs) -> webob.exc.WSGIHTTPException:
    """A webob HTTP error that renders Placement's JSON error body."""
    exc = cls(detail, **kwargs)
    exc.json_formatter = functools.partial(_formatter, code=code)
    return exc


def render(exc: webob.exc.WSGIHTTPException, req: webob.Request) -> webob.Response:
    """The response of an HTTP error: JSON unless the client asks for
    HTML or plain text only (as webob decides, but ``*/*`` and no Accept
    header get JSON)."""
    if not getattr(exc, "json_formatter", None) or \
            exc.json_formatter is webob.exc.WSGIHTTPException.json_formatter:
        exc.json_formatter = functools.partial(_formatter, code=UNDEFINED)
    offers = req.accept.acceptable_offers(["application/json", "text/html", "text/plain"])
    if not offers or offers[0][0] == "application/json":
        req.environ["HTTP_ACCEPT"] = "application/json"
    return req.get_response(exc)


# Backend errors by class, most specific first: (HTTP error, code).
_MAPPING: tuple[tuple[type[errors.PlacementError], type[webob.exc.HTTPError]], ...] = (
    (errors.NotFound, webob.exc.HTTPNotFound),
    (errors.InvalidRequest, webob.exc.HTTPBadRequest),
    (errors.Conflict, webob.exc.HTTPConflict),
    (errors.BackendUnavailable, webob.exc.HTTPServiceUnavailable),
)


def from_backend(exc: errors.PlacementError, detail: str | None = None) -> webob.exc.HTTPError:
    """The HTTP error of a backend error (500 for one it does not know)."""
    for error_cls, http_cls in _MAPPING:
        if isinstance(exc, error_cls):
            return http(http_cls, detail or str(exc), code=exc.code)
    return http(webob.exc.HTTPInternalServerError, detail or str(exc), code=exc.code)


@contextlib.contextmanager
def translated() -> Iterator[None]:
    """Raise a backend error as its HTTP error."""
    try:
        yield
    except errors.PlacementError as exc:
        raise from_backend(exc) from exc
