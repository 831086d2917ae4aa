"""POST /reshaper (1.30): inventories and allocations replaced at once."""

from __future__ import annotations

import webob
import webob.exc

from rtframework.api import errors
from rtframework.api.handlers import common


@common.handler("placement:reshaper:reshape", since=30)
def reshape(req: webob.Request) -> webob.Response:
    raise errors.http(webob.exc.HTTPNotImplemented,
                      "The reshaper is not served by this placement backend yet.")


ROUTES = {"/reshaper": {"POST": reshape}}
