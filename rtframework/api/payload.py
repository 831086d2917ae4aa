"""Reading requests and writing answers: JSON bodies checked against a
schema, the content types Placement accepts and sends, its cache headers."""

from __future__ import annotations

import email.utils
import json
import time
from typing import Any

import jsonschema
import webob
import webob.exc
from oslo_utils import uuidutils

from rtframework.api import errors, microversion


def check_accept(req: webob.Request) -> None:
    """406 unless the client takes application/json."""
    if req.accept and not req.accept.acceptable_offers(["application/json"]):
        raise errors.http(webob.exc.HTTPNotAcceptable, "Only application/json is provided")


def check_content_type(req: webob.Request) -> None:
    """415 unless a body to read is application/json."""
    if req.content_type != "application/json":
        raise errors.http(
            webob.exc.HTTPUnsupportedMediaType,
            f"The media type {req.content_type or None} is not supported, use "
            "application/json")


def json_body(req: webob.Request, schema: dict[str, Any] | None = None) -> Any:
    """The request's JSON body, valid against ``schema``."""
    check_content_type(req)
    try:
        data = json.loads(req.body.decode("utf-8"))
    except ValueError as exc:
        raise errors.http(webob.exc.HTTPBadRequest,
                          f"Malformed JSON: {exc}") from exc
    if schema is not None:
        validate(data, schema)
    return data


_VALIDATOR = jsonschema.Draft4Validator
_FORMATS = jsonschema.FormatChecker()


@_FORMATS.checks("uuid")
def _is_uuid(value: object) -> bool:
    # Placement takes uuids with or without dashes.
    return not isinstance(value, str) or uuidutils.is_uuid_like(value)


def validate(data: Any, schema: dict[str, Any], prefix: str = "JSON does not validate"
             ) -> None:
    """400 naming the first rule ``data`` breaks."""
    validator = _VALIDATOR(schema, format_checker=_FORMATS)
    error = jsonschema.exceptions.best_match(validator.iter_errors(data))
    if error is not None:
        raise errors.http(webob.exc.HTTPBadRequest,
                          f"{prefix}: {error}")


def json_response(req: webob.Request, body: Any, status: int = 200,
                  cache: bool = True) -> webob.Response:
    """A JSON answer; from 1.15 with Placement's ``cache-control`` and
    ``last-modified`` (the time of the answer)."""
    resp = webob.Response(status=status, content_type="application/json", charset=None)
    resp.body = json.dumps(body).encode("utf-8")
    if cache:
        cache_headers(req, resp)
    return resp


def cache_headers(req: webob.Request, resp: webob.Response) -> None:
    if microversion.of(req.environ).at_least(15):
        resp.headers["cache-control"] = "no-cache"
        resp.headers["last-modified"] = email.utils.formatdate(time.time(), usegmt=True)


def no_content(status: int = 204) -> webob.Response:
    resp = webob.Response(status=status)
    resp.content_type = None
    return resp


def created(location: str, body: Any | None = None, req: webob.Request | None = None
            ) -> webob.Response:
    if body is None:
        resp = no_content(201)
    else:
        resp = json_response(req, body, status=201)
    resp.location = location
    return resp
