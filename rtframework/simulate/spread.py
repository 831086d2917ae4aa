"""Hosts spread over the nodes of a multi-host database URL.

A URL naming several hosts (``?host=db1:3306&host=db2:3306&...``, see
:mod:`rtframework.mysql_engine`) connects to the first one that serves.
The multi-writer set-up of a Galera cluster has each compute host name its
nearest node first; the soak imitates it by giving host ``i`` the URL
rotated so that its ``i % n``-th host comes first (the others follow in
order, so a host fails over to the next node when its own one dies).
"""

from __future__ import annotations

import sqlalchemy as sa

from rtframework import mysql_engine


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
