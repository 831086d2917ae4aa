"""The one place that opens databases: engines, transactions, migrations.

Both stores (the sql placement backend and the compute records) go through
here, so SQLite pragmas, pool sizes and alembic upgrades are set once.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import logging
import os
import threading
import time
from collections.abc import Iterator, Mapping

import sqlalchemy as sa
from alembic import command as alembic_command
from alembic.config import Config as AlembicConfig
from oslo_config import cfg

from rtframework import mysql_engine
from rtframework.conf import secrets

LOG = logging.getLogger(__name__)

_SYNC_LOCK = threading.Lock()

# On the placement engine a pooled connection idle for longer than this is
# pinged before use; one used more recently is trusted (a ping is a round
# trip, as much as a statement costs). A connection lost meanwhile fails its
# first statement, which the placement backend's retry layer runs again on a
# fresh connection. The compute records have no such retry layer, so their
# engine pings on every checkout.
PING_AFTER_IDLE_S = 10.0

# How long an upgrade waits for another process's upgrade of the same
# schema before giving up (a first sync of both schemas takes seconds).
SCHEMA_LOCK_TIMEOUT = 300


class SchemaError(RuntimeError):
    """The schema is missing, behind, or cannot be brought up to date."""


class SchemaNotCurrent(SchemaError):
    """The database is not at the newest revision and auto_sync is off."""


def connection_url(conf: cfg.ConfigOpts, group: str) -> str:
    """The configured URL of ``group``, or the embedded SQLite default."""
    url = conf[group].connection
    if url:
        return url
    filename = "compute.sqlite" if group == "database" else "placement.sqlite"
    from rtframework.conf import require_chosen_state_path

    require_chosen_state_path(conf, f"the [{group}] database")
    os.makedirs(conf.state_path, exist_ok=True)
    return f"sqlite:///{os.path.join(conf.state_path, filename)}"


def create_engine(url: str, pool_size: int = 5, max_overflow: int = 10,
                  wsrep_sync_wait: int = mysql_engine.DEFAULT_SYNC_WAIT,
                  ping_every_checkout: bool = False,
                  pg_settings: Mapping[str, str] | None = None) -> sa.Engine:
    """An engine with the settings this project relies on.

    PostgreSQL sessions run without JIT compilation, and with
    ``pg_settings`` (name -> value) besides. SQLite gets WAL mode
    (readers do not block the writer), a busy timeout, and ``BEGIN
    IMMEDIATE`` transactions so that two writers serialize at the start
    instead of failing at commit. MySQL, MariaDB and Galera: see
    :mod:`rtframework.mysql_engine`. Server connections are checked before
    use: on every checkout with ``ping_every_checkout``, else only after
    they sat idle (see PING_AFTER_IDLE_S). The pool hands out the
    connection checked in last.
    """
    parsed = sa.engine.make_url(url)
    if parsed.get_backend_name() == "sqlite":
        engine = sa.create_engine(url, connect_args={"timeout": 30, "check_same_thread": False})

        @sa.event.listens_for(engine, "connect")
        def _sqlite_connect(dbapi_conn, _record):
            dbapi_conn.isolation_level = None  # let SQLAlchemy's BEGIN below rule
            cursor = dbapi_conn.cursor()
            if parsed.database not in (None, "", ":memory:"):
                cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute("PRAGMA busy_timeout=30000")
            cursor.close()

        @sa.event.listens_for(engine, "begin")
        def _sqlite_begin(conn):
            if conn.get_execution_options().get("rtf_read_only"):
                conn.exec_driver_sql("BEGIN")
            else:
                conn.exec_driver_sql("BEGIN IMMEDIATE")

        return engine
    # LIFO: a quiet moment keeps reusing the connection used last, whose
    # server session is warm (its prepared write, its caches), instead of
    # cycling through every connection the pool kept from a busy moment
    # (benchmarks/claims.py: one client after eight). The ones left
    # idle are pinged when a burst reaches them (PING_AFTER_IDLE_S).
    kwargs: dict = {"pool_size": pool_size, "max_overflow": max_overflow,
                    "pool_pre_ping": ping_every_checkout, "pool_use_lifo": True}
    if parsed.get_backend_name() == "postgresql":
        # Our statements are short, but a candidate search over thousands
        # of providers is costed above jit_above_cost, and compiling it
        # then takes longer (~40 ms) than running it.
        settings = {"jit": "off", **(pg_settings or {})}
        kwargs["connect_args"] = {"options": " ".join(f"-c {k}={v}"
                                                      for k, v in settings.items())}
    if parsed.get_backend_name() in mysql_engine.BACKENDS:
        engine = mysql_engine.create(parsed, kwargs, wsrep_sync_wait)
    else:
        engine = sa.create_engine(url, **kwargs)
    if not ping_every_checkout:
        _ping_when_idle(engine)
    return engine


def _ping_when_idle(engine: sa.Engine) -> None:
    """Ping a pooled connection on checkout only when it sat idle for more
    than PING_AFTER_IDLE_S (``pool_pre_ping`` would ping every checkout);
    a failed ping replaces the connection."""
    @sa.event.listens_for(engine, "checkin")
    def _checked_in(_dbapi_conn, record):
        if record is not None:
            record.info["rtf_idle_since"] = time.monotonic()

    @sa.event.listens_for(engine, "checkout")
    def _checked_out(dbapi_conn, record, _proxy):
        idle_since = record.info.pop("rtf_idle_since", None)
        if idle_since is None or time.monotonic() - idle_since < PING_AFTER_IDLE_S:
            return
        try:
            alive = engine.dialect.do_ping(dbapi_conn)
        except engine.dialect.loaded_dbapi.Error as exc:
            raise sa.exc.DisconnectionError(f"pooled connection lost: {exc}") from exc
        if alive is False:
            raise sa.exc.DisconnectionError("pooled connection lost")


def engine_for(conf: cfg.ConfigOpts, group: str,
               pg_settings: Mapping[str, str] | None = None) -> sa.Engine:
    """Engine for ``[database]`` or ``[placement_database]`` (``pg_settings``:
    see :func:`create_engine`).

    A connection that is not a URL, has a non-numeric port or names a
    database driver that is not installed is a ConfigError naming the option.
    """
    url = connection_url(conf, group)
    try:
        return create_engine(
            url,
            pool_size=conf[group].pool_size,
            max_overflow=conf[group].max_overflow,
            wsrep_sync_wait=conf[group].wsrep_sync_wait,
            # Only the placement backend retries a call whose connection
            # was cut; the compute records must not meet a dead one.
            ping_every_checkout=group == "database",
            pg_settings=pg_settings,
        )
    except (sa.exc.ArgumentError, ValueError, ImportError) as exc:
        from rtframework.conf import ConfigError

        raise ConfigError(f"invalid [{group}] connection{_set_in(conf, group)} "
                          f"{masked(url)}: {_url_problem(exc, url)}") from exc


class DatabaseError(RuntimeError):
    """A database could not be opened or used; one line, no SQL."""


class DatabaseNotFound(DatabaseError):
    """The configured database does not exist on its server (or its user
    may not use it): a configuration error, not a failed step."""


# The extra of setup.cfg that installs each server's driver, and that driver.
DRIVER_EXTRA = {"postgresql": "postgresql", "mysql": "mysql", "mariadb": "mysql"}
_EXTRA_DRIVER = {"postgresql": "psycopg2", "mysql": "pymysql", "mariadb": "pymysql"}
# MySQL: unknown database, or access denied to it (which a user without
# rights gets whether it exists or not).
_MYSQL_MISSING = (1049, 1044)


def is_missing_database(backend: str, name: str | None, error: BaseException) -> bool:
    """Whether ``error`` (the driver's) says the database ``name`` is not there."""
    if backend == "postgresql":
        return f'database "{name}" does not exist' in str(error)
    if backend in mysql_engine.BACKENDS:
        return mysql_engine.error_code(error) in _MYSQL_MISSING
    return False


def missing_driver(url: sa.engine.URL, exc: ImportError) -> str:
    """Why ``url``'s driver cannot be loaded, and the extra that installs one."""
    backend = url.get_backend_name()
    extra = DRIVER_EXTRA.get(backend)
    if extra is None:
        return f"the database driver is not installed ({exc})"
    text = (f"the database driver is not installed ({exc}); install the [{extra}] extra: "
            f"pip install 'rtframework[{extra}]' (from a checkout: pip install -e '.[{extra}]')")
    driver = _EXTRA_DRIVER[backend]
    if url.get_driver_name() != driver:
        text += f", which brings {driver}: name it in the URL ({backend}+{driver}://...)"
    return text


def _set_in(conf: cfg.ConfigOpts, group: str) -> str:
    """' (set in FILE)' when a configuration file set the connection."""
    try:
        where = conf.get_location("connection", group)
    except cfg.Error:
        return ""
    if where is not None and where.location is cfg.Locations.user and where.detail:
        return f" (set in {where.detail})"
    return ""


def masked(url: str) -> str:
    """The URL without its password (parsed or not)."""
    try:
        return sa.engine.make_url(url).render_as_string(hide_password=True)
    except (sa.exc.ArgumentError, ValueError):
        return secrets.mask(repr(url))


def _url_problem(exc: BaseException, url: str) -> str:
    if isinstance(exc, sa.exc.NoSuchModuleError):
        return (f"unknown database dialect or driver ({str(exc).rsplit(':', 1)[-1]}); "
                "use sqlite:///PATH, postgresql+psycopg2://... or mysql+pymysql://...")
    if isinstance(exc, sa.exc.ArgumentError):
        return "not a database URL (e.g. postgresql+psycopg2://user:pass@host:5432/name)"
    if isinstance(exc, ImportError):
        return missing_driver(sa.engine.make_url(url), exc)
    return f"{exc} (is the port a number?)"


def describe(exc: BaseException) -> str:
    """The database's own words on one line: no SQL, no parameters, no
    SQLAlchemy background link."""
    orig = getattr(exc, "orig", None)
    text = " ".join(str(orig if orig is not None else exc).split())
    text = text.split(" [SQL: ", 1)[0].split(" (Background on this error", 1)[0]
    return text[:300] or type(exc).__name__


@contextlib.contextmanager
def opening(conf: cfg.ConfigOpts, group: str) -> Iterator[None]:
    """Errors while opening ``group``'s database name the option and URL."""
    try:
        yield
    except (sa.exc.SQLAlchemyError, OSError) as exc:
        url = connection_url(conf, group)
        reason = describe(exc) if isinstance(exc, sa.exc.SQLAlchemyError) else (
            f"{exc.strerror or exc}: {exc.filename}" if exc.filename else str(exc))
        parsed = sa.engine.make_url(url)
        missing = isinstance(exc, sa.exc.DBAPIError) and is_missing_database(
            parsed.get_backend_name(), parsed.database, exc.orig)
        error, advice = ((DatabaseNotFound, "; create the database, or correct the URL")
                         if missing else (DatabaseError, ""))
        raise error(f"cannot use the [{group}] connection{_set_in(conf, group)} "
                    f"{masked(url)}: {reason}{advice}") from exc


@contextlib.contextmanager
def transaction(engine: sa.Engine) -> Iterator[sa.Connection]:
    """One write transaction: committed on success, rolled back on error."""
    with engine.begin() as conn:
        yield conn


@contextlib.contextmanager
def read(engine: sa.Engine) -> Iterator[sa.Connection]:
    """One read-only transaction (on SQLite it does not take the write lock).

    On PostgreSQL, whose READ COMMITTED gives every statement its own
    snapshot inside a transaction as well, the statements run without one:
    no BEGIN and COMMIT round trips around a read.
    """
    if engine.dialect.name == "postgresql":
        with autocommit(engine) as conn:
            yield conn
        return
    with engine.connect() as conn:
        conn = conn.execution_options(rtf_read_only=True)
        with conn.begin():
            yield conn


@contextlib.contextmanager
def autocommit(engine: sa.Engine) -> Iterator[sa.Connection]:
    """A PostgreSQL connection whose every statement is its own
    transaction: no BEGIN or COMMIT round trips."""
    with engine.connect() as conn:
        # The driver's own switch: isolation_level="AUTOCOMMIT" would cost
        # a round trip each way.
        dbapi_conn = conn.connection.dbapi_connection
        dbapi_conn.autocommit = True
        try:
            with conn.begin():
                yield conn
        finally:
            if not dbapi_conn.closed:
                dbapi_conn.autocommit = False


def alembic_config(script_location: str, engine: sa.Engine, version_table: str) -> AlembicConfig:
    config = AlembicConfig()
    config.set_main_option("script_location", script_location)
    config.set_main_option("version_table", version_table)
    config.attributes["engine"] = engine
    return config


def _lock_key(engine: sa.Engine, version_table: str) -> str:
    return f"rtframework-schema:{engine.url.database}:{version_table}"


@contextlib.contextmanager
def schema_lock(engine: sa.Engine, version_table: str) -> Iterator[None]:
    """Hold the database-wide lock of one schema while it is upgraded.

    Every process (agents with auto_sync, ``rtf db sync``) takes it before
    looking at the version table, so N of them started together on an
    empty database create the schema once and the others find it done.
    PostgreSQL: a session advisory lock (scoped to the database). MySQL and
    MariaDB: ``GET_LOCK`` (server-wide, so the name carries the database).
    SQLite: an exclusive ``flock`` on a file next to the database. A killed
    holder releases the lock with its connection or file descriptor.
    """
    key = _lock_key(engine, version_table)
    backend = engine.url.get_backend_name()
    with _SYNC_LOCK:
        if backend == "postgresql":
            number = int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big",
                                    signed=True)
            with engine.connect() as conn:
                conn = conn.execution_options(isolation_level="AUTOCOMMIT")
                conn.execute(sa.text("SELECT pg_advisory_lock(:k)"), {"k": number})
                try:
                    yield
                finally:
                    conn.execute(sa.text("SELECT pg_advisory_unlock(:k)"), {"k": number})
        elif backend in mysql_engine.BACKENDS:
            # GET_LOCK names are at most 64 characters.
            name = "rtf-schema-" + hashlib.sha256(key.encode()).hexdigest()[:40]
            with engine.connect() as conn:
                conn = conn.execution_options(isolation_level="AUTOCOMMIT")
                got = conn.execute(sa.text("SELECT GET_LOCK(:n, :t)"),
                                   {"n": name, "t": SCHEMA_LOCK_TIMEOUT}).scalar()
                if got != 1:
                    raise SchemaError(
                        f"schema {version_table}: another upgrade held the lock for "
                        f"{SCHEMA_LOCK_TIMEOUT} s; is an `rtf db sync` stuck?")
                try:
                    yield
                finally:
                    conn.execute(sa.text("SELECT RELEASE_LOCK(:n)"), {"n": name})
        elif engine.url.database in (None, "", ":memory:"):
            yield
        else:
            with open(f"{engine.url.database}.schema-lock", "a") as handle:
                fcntl.flock(handle, fcntl.LOCK_EX)
                try:
                    yield
                finally:
                    fcntl.flock(handle, fcntl.LOCK_UN)


def upgrade(script_location: str, engine: sa.Engine,
            version_table: str) -> tuple[str | None, str | None]:
    """Bring the schema to the newest revision (idempotent, safe to race);
    returns the revisions before and after (None: no schema)."""
    with schema_lock(engine, version_table):
        before = current_revision(script_location, engine, version_table)
        alembic_command.upgrade(alembic_config(script_location, engine, version_table), "head")
        return before, head_revision(script_location)


def describe_upgrade(what: str, before: str | None, after: str | None) -> str:
    """One line saying what :func:`upgrade` did to the ``what`` database."""
    if before == after:
        return f"{what} database: up to date (revision {after})"
    if before is None:
        return f"{what} database: schema created (revision {after})"
    return f"{what} database: upgraded from revision {before} to {after}"


@functools.cache
def head_revision(script_location: str) -> str | None:
    from alembic.script import ScriptDirectory

    return ScriptDirectory(script_location).get_current_head()


def require_current(script_location: str, engine: sa.Engine, version_table: str,
                    what: str) -> None:
    """Raise SchemaNotCurrent (one line, naming the fix) unless the schema
    of ``what`` is at the newest revision."""
    head = head_revision(script_location)
    current = current_revision(script_location, engine, version_table)
    if current == head:
        return
    if current is None:
        state = "has no schema"
    else:
        state = f"is at schema revision {current}, not the newest {head}"
    raise SchemaNotCurrent(
        f"the {what} database {engine.url.render_as_string(hide_password=True)} {state}"
        f" and auto_sync is off: run `rtf db sync`")


def current_revision(script_location: str, engine: sa.Engine, version_table: str) -> str | None:
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as conn:
        ctx = MigrationContext.configure(conn, opts={"version_table": version_table})
        return ctx.get_current_revision()


def run_migrations(context, metadata: sa.MetaData) -> None:
    """Body of every alembic env.py here: migrate on the engine that
    :func:`alembic_config` handed over, never on a URL from an ini file.

    One transaction per revision, its version stamp included: a process
    killed mid-upgrade leaves the database at the last revision it
    finished (PostgreSQL and SQLite roll the unfinished one back; MySQL
    commits each DDL statement, so every revision is written to be re-run
    over its own partial work, see :mod:`rtframework.migration_ops`).
    """
    config = context.config
    engine = config.attributes["engine"]
    with engine.connect() as connection:
        context.configure(
            connection=connection,
            target_metadata=metadata,
            version_table=config.get_main_option("version_table"),
            transaction_per_migration=True,
            # SQLite cannot ALTER most things in place; batch mode copies tables.
            render_as_batch=connection.dialect.name == "sqlite",
        )
        with context.begin_transaction():
            context.run_migrations()
