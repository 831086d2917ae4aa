"""The WSGI application: routes, the microversion header, errors.

Middleware, outermost first: request id (``x-openstack-request-id``),
authentication (``noauth2`` or keystonemiddleware's ``auth_token``),
the request context, then the router, which sets the microversion,
dispatches to a handler by path and method (405 with ``Allow`` for a
method the path does not take) and renders every error as Placement's
JSON error body.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import routes
import webob
import webob.dec
import webob.exc
from oslo_config import cfg
from oslo_middleware import cors, request_id

from rtframework.api import auth, errors, microversion, policy
from rtframework.api.handlers import (
    aggregates,
    allocation_candidates,
    allocations,
    inventories,
    reshaper,
    resource_classes,
    resource_providers,
    root,
    traits,
    usages,
)
from rtframework.placement import backend as contract

LOG = logging.getLogger(__name__)

Handler = Callable[[webob.Request], webob.Response]
BACKEND_KEY = "rtframework.api.backend"
POLICY_KEY = "rtframework.api.policy"

_FAMILIES = (root, resource_providers, inventories, aggregates, traits, usages,
             resource_classes, allocations, allocation_candidates, reshaper)


class Router:
    """Dispatch on path, then on method."""

    def __init__(self, backend: contract.PlacementBackend, enforcer: policy.Enforcer) -> None:
        self.backend = backend
        self.enforcer = enforcer
        self.mapper = routes.Mapper()
        self.methods: dict[str, dict[str, Handler]] = {}
        for family in _FAMILIES:
            for path, methods in family.ROUTES.items():
                self.methods[path] = methods
                self.mapper.connect(path, route_path=path)

    @webob.dec.wsgify
    def __call__(self, req: webob.Request) -> webob.Response:
        try:
            version = microversion.parse(microversion.requested(req.headers))
        except microversion.BadVersion as exc:
            return self._answer(req, errors.http(webob.exc.HTTPBadRequest, str(exc)),
                                microversion.MIN)
        except microversion.UnsupportedVersion as exc:
            return self._answer(req, errors.http(webob.exc.HTTPNotAcceptable, str(exc)),
                                microversion.MIN)
        req.environ[microversion.ENVIRON_KEY] = version
        req.environ[BACKEND_KEY] = self.backend
        req.environ[POLICY_KEY] = self.enforcer
        try:
            resp = self._dispatch(req)
        except webob.exc.HTTPException as exc:
            resp = exc
        return self._answer(req, resp, version)

    def _dispatch(self, req: webob.Request) -> webob.Response:
        match = self.mapper.match(environ=req.environ)
        if match is None:
            raise errors.http(webob.exc.HTTPNotFound)
        methods = self.methods[match.pop("route_path")]
        handler = methods.get(req.method)
        if handler is None:
            allowed = ", ".join(sorted(methods))
            exc = errors.http(webob.exc.HTTPMethodNotAllowed,
                              f"The method {req.method} is not allowed for this resource.")
            exc.headers["allow"] = allowed
            raise exc
        _check_body_headers(req)
        req.urlvars = match
        return handler(req)

    @staticmethod
    def _answer(req: webob.Request, resp: webob.Response,
                version: microversion.Version) -> webob.Response:
        if isinstance(resp, webob.exc.WSGIHTTPException) and resp.status_int >= 400:
            resp = errors.render(resp, req)
        resp.headers[microversion.HEADER] = f"{microversion.SERVICE_TYPE} {version}"
        resp.vary = tuple(v for v in (resp.vary or ()) if v.lower() != "openstack-api-version"
                          ) + (microversion.HEADER.lower(),)
        return resp


def _check_body_headers(req: webob.Request) -> None:
    """A body needs an integer content-length and a content-type."""
    length = req.headers.get("content-length")
    if not length:  # absent, or empty as some servers pass it
        return
    try:
        size = int(length)
    except ValueError:
        raise errors.http(webob.exc.HTTPBadRequest,
                          "content-length header must be an integer") from None
    if size > 0 and not req.headers.get("content-type"):
        raise errors.http(webob.exc.HTTPBadRequest,
                          "content-type header required when content-length > 0")


class _Faults:
    """A 500 with Placement's body for anything a handler did not expect."""

    def __init__(self, app) -> None:
        self.app = app

    @webob.dec.wsgify
    def __call__(self, req: webob.Request) -> webob.Response:
        try:
            return req.get_response(self.app)
        except Exception as exc:  # noqa: BLE001 - the last line of defence
            LOG.exception("unexpected error serving %s %s", req.method, req.path)
            return errors.render(errors.http(webob.exc.HTTPInternalServerError,
                                             f"{type(exc).__name__}: {exc}"), req)


def register_library_opts(conf: cfg.ConfigOpts) -> None:
    """The groups the libraries under the API read ([keystone_authtoken],
    [oslo_policy], [cors]), so a configuration file may set them."""
    from keystonemiddleware import auth_token
    from oslo_policy import opts as policy_opts

    for group, opts in auth_token.list_opts():
        conf.register_opts(opts, group=group)
    policy_opts.set_defaults(conf)
    conf.register_opts(cors.CORS_OPTS, "cors")


def make_app(conf: cfg.ConfigOpts, backend: contract.PlacementBackend):
    """The whole application for ``backend``, configured by ``conf``."""
    enforcer = policy.Enforcer(conf)
    app = Router(backend, enforcer)
    app = auth.context_middleware(app)
    app = auth.auth_middleware(app, conf)
    app = _Faults(app)
    app = request_id.RequestId(app)
    register_library_opts(conf)
    if conf.cors.allowed_origin:
        app = cors.CORS(app, conf)
    return app
