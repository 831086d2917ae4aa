"""Engines for MySQL, MariaDB and MariaDB Galera (``mysql+pymysql://``,
``mariadb+pymysql://``): the same session settings for both URL spellings,
causal reads on Galera, and several hosts in one URL.

Several hosts, as SQLAlchemy spells them for PostgreSQL::

    mysql+pymysql://user:pw@/placement?host=10.0.0.1:3306&host=10.0.0.2:3306

A new connection goes to the first host that answers and serves (on
Galera: ``wsrep_ready = ON``), in the order given. Every process of a
cloud listing the hosts in the same order writes through one node while it
is up (single writer, no certification conflicts between nodes) and moves
to the next when it dies; pre-ping drops pooled connections to a dead node,
error 1047 (a node that left the primary component) drops the connection
it came on, and the placement backend's retry layer re-runs the call that
was cut.
"""

from __future__ import annotations

import contextlib
import logging

import sqlalchemy as sa

LOG = logging.getLogger(__name__)

BACKENDS = ("mysql", "mariadb")
# Strict mode (an over-long or invalid value is an error, never silently
# cut, as oslo.db sets it) and byte-wise comparison of the connection's
# strings: names and uuids differing in case are different.
SQL_MODE = "TRADITIONAL"
CHARSET, COLLATION = "utf8mb4", "utf8mb4_bin"
# wsrep_sync_wait=1: on a Galera node, every read first waits until the
# node has applied what the cluster committed before it.
DEFAULT_SYNC_WAIT = 1
# Seconds to wait for one host of several before trying the next.
FAILOVER_CONNECT_TIMEOUT = 5


def _hosts(parsed: sa.URL) -> list[tuple[str, int]]:
    value = parsed.query.get("host")
    if value is None:
        return []
    found = []
    for item in (value,) if isinstance(value, str) else value:
        host, _, port = item.rpartition(":") if ":" in item else (item, "", "3306")
        try:
            found.append((host, int(port)))
        except ValueError:
            raise ValueError(f"host={item!r} in the database URL: the port is not a "
                             "number (expected host:port)") from None
    return found


def create(parsed: sa.URL, kwargs: dict, wsrep_sync_wait: int) -> sa.Engine:
    """The engine of a MySQL/MariaDB URL, ``kwargs`` being the pool settings."""
    # READ COMMITTED: the compare-and-swap writes re-read committed rows
    # (see placement.sql.allocations); REPEATABLE READ would hold stale
    # snapshots and deadlock more. The server closes idle connections after
    # wait_timeout (8 h by default): recycle well before.
    kwargs["isolation_level"] = "READ COMMITTED"
    kwargs["pool_recycle"] = 3600
    if "charset" not in parsed.query:
        parsed = parsed.update_query_dict({"charset": CHARSET})
    hosts = _hosts(parsed)
    if hosts:
        parsed = parsed.difference_update_query(["host"]).set(host=hosts[0][0],
                                                              port=hosts[0][1])
    engine = sa.create_engine(parsed, **kwargs)
    binary = parsed.query["charset"] == CHARSET

    @sa.event.listens_for(engine, "connect")
    def _session_settings(dbapi_conn, _record):
        cursor = dbapi_conn.cursor()
        cursor.execute(f"SET SESSION sql_mode = '{SQL_MODE}'")
        # GROUP_CONCAT (a provider's traits in one string) is cut silently
        # at this length; MySQL's default is 1024 bytes.
        cursor.execute(f"SET SESSION group_concat_max_len = {GROUP_CONCAT_MAX_LEN}")
        if binary:
            cursor.execute(f"SET NAMES {CHARSET} COLLATE {COLLATION}")
        if _wsrep_on(cursor):
            cursor.execute(f"SET SESSION wsrep_sync_wait = {int(wsrep_sync_wait)}")
        cursor.close()

    @sa.event.listens_for(engine, "handle_error")
    def _not_ready_is_a_disconnect(context):
        # A Galera node outside the primary component answers every
        # statement that reads or writes a table with 1047, but a ping as
        # usual: drop the connection (and the pool's older ones) so that a
        # retry connects anew, to the first serving node when the URL
        # names several.
        # A refused login and no host reachable are reported at once,
        # never retried, whatever the hosts' answers quoted in the message
        # ("Connection was killed" reads as a disconnect to SQLAlchemy).
        exc = context.original_exception
        if not isinstance(exc, engine.dialect.loaded_dbapi.Error):
            return
        code = error_code(exc)
        if code == NOT_READY:
            context.is_disconnect = True
        elif code in _AT_ONCE:
            context.is_disconnect = False

    if len(hosts) > 1:
        _connect_to_first_serving(engine, hosts)
    return engine


# "WSREP has not yet prepared node for application use".
NOT_READY = 1047


GROUP_CONCAT_MAX_LEN = 1 << 24


def error_code(exc: BaseException) -> int | None:
    """The server's error number of a MySQL/MariaDB driver error."""
    args = getattr(exc, "args", ())
    return args[0] if args and isinstance(args[0], int) else None


def _wsrep_on(cursor) -> bool:
    cursor.execute("SHOW VARIABLES LIKE 'wsrep_on'")
    row = cursor.fetchone()
    return row is not None and str(row[1]).upper() == "ON"


def _serving(dbapi_conn) -> bool:
    """False for a Galera node outside the primary component."""
    cursor = dbapi_conn.cursor()
    try:
        if not _wsrep_on(cursor):
            return True
        cursor.execute("SHOW STATUS LIKE 'wsrep_ready'")
        row = cursor.fetchone()
    finally:
        cursor.close()
    return row is not None and str(row[1]).upper() == "ON"


# Refusals from a server that answered the connect: a login it refuses
# (1045), a database the user may not use (1044) or that does not exist
# (1049). Every node of a cluster shares its users, grants and databases,
# so they are the operator's to fix, not an outage.
REFUSED = frozenset({1044, 1045, 1049})
# 2003: no host could be reached.
_AT_ONCE = REFUSED | {2003}


def _connect_to_first_serving(engine: sa.Engine, hosts: list[tuple[str, int]]) -> None:
    @sa.event.listens_for(engine, "do_connect")
    def _first_serving(dialect, _record, cargs, cparams):
        cparams.setdefault("connect_timeout", FAILOVER_CONNECT_TIMEOUT)
        failures, answered, refused, lost = [], False, None, False
        for host, port in hosts:
            try:
                conn = dialect.loaded_dbapi.connect(*cargs, **{**cparams, "host": host,
                                                               "port": port})
            except dialect.loaded_dbapi.Error as exc:
                failures.append(f"{host}:{port}: {exc}")
                number = error_code(exc)
                if refused is None and number in REFUSED:
                    refused = number
                continue
            try:
                serving = _serving(conn)
            except dialect.loaded_dbapi.Error as exc:
                # Lost while asking (the node went down): the next one.
                with contextlib.suppress(dialect.loaded_dbapi.Error):
                    conn.close()  # it may have been closed already
                failures.append(f"{host}:{port}: {exc}")
                lost = True
                continue
            if serving:
                if failures:
                    LOG.info("database host %s:%s serves; passed over: %s", host, port,
                             "; ".join(failures))
                return conn
            answered = True
            conn.close()
            failures.append(f"{host}:{port}: Galera node not ready (wsrep_ready OFF)")
        # Some node answered but none serves (a cluster out of quorum for
        # a moment): not ready, which the placement backend retries within
        # its [placement] conflict_retries (a few seconds). A node refused
        # the login or the database: that error, reported at once, as one
        # host would report it. None answered (or those that did were lost
        # before the check): cannot connect, at once.
        code = NOT_READY if answered else (refused or 2003)
        if code == NOT_READY:
            what = "served"
        elif lost:
            what = "could be used"
        else:
            what = "answered" if code == 2003 else "accepted the login and database"
        LOG.log(logging.DEBUG if code == NOT_READY else logging.WARNING,
                "no database host %s: %s", what, "; ".join(failures))
        raise dialect.loaded_dbapi.OperationalError(
            code, f"no database host of {len(hosts)} {what}: {'; '.join(failures)}")
