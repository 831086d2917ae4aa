"""GET /: version discovery."""

from __future__ import annotations

import webob

from rtframework.api import microversion, payload


def home(req: webob.Request) -> webob.Response:
    body = {"versions": [{
        "id": "v1.0",
        "max_version": str(microversion.MAX),
        "min_version": str(microversion.MIN),
        "status": "CURRENT",
        "links": [{"rel": "self", "href": ""}],
    }]}
    return payload.json_response(req, body)


ROUTES = {"/": {"GET": home}}
