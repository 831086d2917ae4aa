"""Throw-away databases, configurations and a real Placement for a run.

Databases and the Placement server come from the test fixtures (the same
code the functional tests use), so a benchmark measures exactly what the
tests exercise: every database is uniquely named and dropped afterwards.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Iterator

from keystoneauth1 import loading as ks_loading
from oslo_config import cfg

from rtframework import conf as rtconf
from rtframework.placement.backend import PlacementBackend, load_backend
from tests.fixtures import databases
from tests.fixtures.placement_server import PlacementServer, Serving, running_placement

ENGINES = databases.ENGINES


def placement_available() -> bool:
    """Whether openstack-placement and gunicorn, which serves it, are
    installed in this interpreter."""
    try:
        import gunicorn  # noqa: F401 - only checking it is importable
        import placement  # noqa: F401
    except ImportError:
        return False
    return True


@contextlib.contextmanager
def database(engine: str, work_dir: str) -> Iterator[str]:
    """URL of a new, uniquely named database of ``engine``, dropped on exit."""
    os.makedirs(work_dir, exist_ok=True)
    with databases.temporary_database(engine, work_dir) as url:
        yield url


# Threads per gunicorn worker: with one worker per core, enough request
# slots for the largest number of benchmark clients (8) on 2 cores.
PLACEMENT_THREADS = 4


def placement_serving(engine: str) -> Serving:
    """Placement as operators serve it: gunicorn, one worker process per
    core, threads, a DB connection per thread. On SQLite one worker and one
    thread: concurrent Placement writers there fail with "database is
    locked", so nobody serves it otherwise."""
    if engine == "sqlite":
        return Serving("gunicorn", workers=1, threads=1)
    return Serving("gunicorn", workers=os.cpu_count() or 1, threads=PLACEMENT_THREADS)


@contextlib.contextmanager
def placement(work_dir: str, engine: str, serving: Serving) -> Iterator[PlacementServer]:
    """OpenStack Placement on its own temporary database of ``engine``."""
    os.makedirs(work_dir, exist_ok=True)
    with running_placement(work_dir, engine, serving) as server:
        yield server


class BackgroundPlacement:
    """Placement started on a thread, so that a smoke run can do its
    Placement-free work meanwhile; ``server()`` waits until it is up."""

    def __init__(self, work_dir: str, engine: str, serving: Serving) -> None:
        self._ready, self._stop = threading.Event(), threading.Event()
        self._server: PlacementServer | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._serve, args=(work_dir, engine, serving),
                                        daemon=True)
        self._thread.start()

    def _serve(self, work_dir: str, engine: str, serving: Serving) -> None:
        try:
            with placement(work_dir, engine, serving) as server:
                self._server = server
                self._ready.set()
                self._stop.wait()
        except BaseException as exc:  # noqa: BLE001 - handed to server()
            self._error = exc
        finally:
            self._ready.set()

    def server(self) -> PlacementServer:
        self._ready.wait()
        if self._server is None:
            raise RuntimeError(f"Placement did not start: {self._error}") from self._error
        return self._server

    def close(self) -> None:
        self._stop.set()
        self._thread.join()


def new_conf(state_path: str, **groups: dict) -> cfg.ConfigOpts:
    """A parsed ConfigOpts (never the global CONF) with overrides per group,
    e.g. ``new_conf(path, placement_database={"connection": url})``."""
    conf = rtconf.new_conf()
    conf([], project="rtframework", default_config_files=[])
    conf.set_override("state_path", state_path)
    for group, values in groups.items():
        for name, value in values.items():
            conf.set_override(name, value, group=None if group == "DEFAULT" else group)
    return conf


def sql_backend(state_path: str, url: str) -> PlacementBackend:
    """The ``sql`` backend on ``url`` (schema created on open)."""
    conf = new_conf(state_path, placement_database={"connection": url, "pool_size": 10})
    return load_backend(conf, "sql")


def http_backend(state_path: str, endpoint: str) -> PlacementBackend:
    """The ``http`` backend talking to a no-auth Placement at ``endpoint``."""
    conf = new_conf(state_path)
    conf.register_opts(ks_loading.get_auth_plugin_conf_options("admin_token"), group="placement")
    for name, value in {"backend": "http", "auth_type": "admin_token", "endpoint": endpoint,
                        "token": "admin"}.items():
        conf.set_override(name, value, group="placement")
    return load_backend(conf, "http")


def quiet_logs() -> None:
    """Allocation changes are logged at INFO; thousands of lines per second
    would measure the terminal, not the backend."""
    logging.basicConfig(level=logging.WARNING)
    for name in ("rtframework", "alembic", "keystoneauth", "stevedore"):
        logging.getLogger(name).setLevel(logging.WARNING)
