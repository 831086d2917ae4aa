"""A soak over a database of several nodes (a Galera cluster).

Spreading: a URL naming several hosts (``?host=db1:3306&host=db2:3306``,
see :mod:`rtframework.mysql_engine`) connects to the first one that
serves. The multi-writer set-up of a Galera cluster has each compute host
name its nearest node first; the soak imitates it by giving host ``i`` the
URL rotated so that its ``i % n``-th host comes first (the others follow in
order, so a host fails over to the next node when its own one dies).

Riding out a node's loss: the soak's own reads and writes of the records
(choosing operations, marking hosts down) go through :class:`Steady`,
which re-runs a call whose connection was cut, so a node killed under the
soak ends none of its bookkeeping (the hosts have their own retries).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import sqlalchemy as sa

from rtframework import mysql_engine
from rtframework.proxy import CallProxy

LOG = logging.getLogger(__name__)


def database_hosts(url: str) -> list[str]:
    """The ``host=`` entries of ``url``, in order (none for one host)."""
    value = sa.engine.make_url(url).query.get("host")
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


def check(url: str | None) -> None:
    """Raise ValueError unless ``url`` is a MySQL/MariaDB URL naming
    several hosts (what spreading needs)."""
    if url is None:
        raise ValueError("spreading hosts over database nodes needs --database-url")
    try:
        parsed = sa.engine.make_url(url)
    except sa.exc.ArgumentError as exc:
        raise ValueError(f"not a database URL: {exc}") from None
    if parsed.get_backend_name() not in mysql_engine.BACKENDS:
        raise ValueError("spreading hosts over database nodes needs a MySQL/MariaDB "
                         "(Galera) URL naming several hosts, not "
                         f"{parsed.get_backend_name()}")
    if len(database_hosts(url)) < 2:
        raise ValueError("spreading hosts over database nodes needs a URL naming several "
                         "hosts: mysql+pymysql://user:pw@/db?host=db1:3306&host=db2:3306")


def url_for(url: str, index: int) -> str:
    """``url`` with its hosts rotated so that host ``index % n`` comes first."""
    hosts = database_hosts(url)
    if len(hosts) < 2:
        return url
    first = index % len(hosts)
    order = hosts[first:] + hosts[:first]
    parsed = sa.engine.make_url(url).difference_update_query(["host"])
    return parsed.update_query_pairs([("host", h) for h in order]).render_as_string(
        hide_password=False)


def first_host(url: str) -> str:
    """The host a URL connects to while it serves."""
    hosts = database_hosts(url)
    if hosts:
        return hosts[0]
    parsed = sa.engine.make_url(url)
    return f"{parsed.host}:{parsed.port}" if parsed.port else str(parsed.host)


def host_settings(settings: list, url: str, index: int) -> list:
    """``settings`` with both database connections of host ``index`` spread."""
    own = url_for(url, index)
    return [*settings, ("database", "connection", own), ("placement_database", "connection", own)]


class Steady(CallProxy):
    """Forwards to ``wrapped``; a call that fails because its database
    connection went away (OperationalError, InterfaceError) is re-run,
    for up to ``seconds`` (a Galera cluster freezes for several seconds
    while it drops a dead node)."""

    def __init__(self, wrapped: Any, seconds: float = 60.0, pause: float = 0.2) -> None:
        super().__init__(wrapped)
        self._seconds = seconds
        self._pause = pause

    def _around(self, name: str, call: Callable[[], Any]) -> Any:
        return self.call(call, name)

    def call(self, fn: Callable[[], Any], what: str = "call") -> Any:
        deadline = time.monotonic() + self._seconds
        while True:
            try:
                return fn()
            except (sa.exc.OperationalError, sa.exc.InterfaceError) as exc:
                if time.monotonic() >= deadline:
                    raise
                LOG.warning("%s lost its database connection (%s); again", what, exc.orig)
                time.sleep(self._pause)
