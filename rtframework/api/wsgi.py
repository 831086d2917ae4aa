"""``application``: the WSGI entry point for gunicorn, uWSGI or mod_wsgi.

Reads the configuration files named by ``RTF_CONFIG_FILE`` (comma
separated), else /etc/rtframework/rtframework.conf when it exists, and
serves the backend ``[placement] backend`` names (``sql`` by default).
"""

from __future__ import annotations

import os

from rtframework import conf as rtconf
from rtframework.api import app as api_app
from rtframework.placement.backend import load_backend


def config_files() -> list[str]:
    env = os.environ.get("RTF_CONFIG_FILE")
    if env:
        return [f for f in env.split(",") if f]
    return [rtconf.DEFAULT_CONFIG_FILE] if os.path.exists(rtconf.DEFAULT_CONFIG_FILE) else []


def build(files: list[str] | None = None):
    """A configured application (one backend per process)."""
    conf = rtconf.new_conf()
    api_app.register_library_opts(conf)
    conf = rtconf.load(config_files() if files is None else files, conf=conf)
    return api_app.make_app(conf, load_backend(conf))


class _Lazy:
    """Builds the application on the first request, in the worker that
    serves it (a forking server must not share the database pool)."""

    def __init__(self) -> None:
        self._app = None

    def __call__(self, environ, start_response):
        if self._app is None:
            self._app = build()
        return self._app(environ, start_response)


application = _Lazy()
