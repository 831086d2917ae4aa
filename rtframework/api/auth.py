"""Authentication: ``noauth2`` for tests and development, keystonemiddleware's
``auth_token`` in production; then a request context for policy.

``noauth2`` trusts the ``X-Auth-Token`` header as ``user[:project]``
(the user ``admin`` has the admin role unless ``X-Roles`` says
otherwise), as Placement's does. Version discovery at ``/`` needs no
token under either strategy.
"""

from __future__ import annotations

import webob
import webob.dec
import webob.exc
from keystonemiddleware import auth_token
from oslo_config import cfg
from oslo_context import context as oslo_context
from oslo_middleware import request_id

from rtframework.api import errors

CONTEXT_KEY = "rtframework.api.context"


def _is_root(environ) -> bool:
    return environ.get("PATH_INFO", "") in ("", "/")


class NoAuth:
    def __init__(self, app) -> None:
        self.app = app

    @webob.dec.wsgify
    def __call__(self, req: webob.Request):
        if _is_root(req.environ):
            return self.app
        token = req.headers.get("X-Auth-Token")
        if token is None:
            return errors.render(errors.http(webob.exc.HTTPUnauthorized), req)
        user_id, _, project_id = token.partition(":")
        if "X-Roles" in req.headers:
            roles = req.headers["X-Roles"].split(",")
        else:
            roles = ["admin"] if user_id == "admin" else []
        req.headers["X-User-Id"] = user_id
        if not req.headers.get("OpenStack-System-Scope"):
            # The legacy header: an X-Project-Id the client sent wins.
            req.headers["X-Tenant-Id"] = project_id or user_id
        req.headers["X-Roles"] = ",".join(roles)
        return self.app


class KeystoneAuth(auth_token.AuthProtocol):
    """auth_token, except for version discovery at ``/``."""

    def __init__(self, app, conf: dict) -> None:
        self._unprotected = app
        super().__init__(app, conf)

    def __call__(self, environ, start_response):
        if _is_root(environ):
            return self._unprotected(environ, start_response)
        return super().__call__(environ, start_response)


class Context:
    """The request context (user, project, roles) from the auth headers."""

    def __init__(self, app) -> None:
        self.app = app

    @webob.dec.wsgify
    def __call__(self, req: webob.Request):
        ctx = oslo_context.RequestContext.from_environ(
            req.environ, request_id=req.environ.get(request_id.ENV_REQUEST_ID))
        if ctx.user_id is None and not _is_root(req.environ):
            return errors.render(errors.http(webob.exc.HTTPUnauthorized), req)
        req.environ[CONTEXT_KEY] = ctx
        return self.app


def context_middleware(app):
    return Context(app)


def auth_middleware(app, conf: cfg.ConfigOpts):
    if conf.api.auth_strategy == "noauth2":
        return NoAuth(app)
    return KeystoneAuth(app, {"oslo_config_config": conf})
