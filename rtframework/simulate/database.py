"""The soak's server database: created when the server lets us, otherwise
one message saying exactly what to run."""

from __future__ import annotations

import sqlalchemy as sa

from rtframework import db, mysql_engine

_SERVERS = ("postgresql", *mysql_engine.BACKENDS)


class DatabaseUnavailable(ValueError):
    """The soak's database cannot be used and was not created; says why and what to run."""


def ensure_database(url: str) -> bool:
    """Make sure the database of ``url`` exists; True when it was created here.

    SQLite files are created by the engine itself. For PostgreSQL and
    MySQL/MariaDB a missing database is created through the server's
    maintenance database with the same credentials; when that is refused
    the error names the command an administrator runs.
    """
    parsed = sa.engine.make_url(url)
    backend = parsed.get_backend_name()
    if backend not in _SERVERS:
        return False
    try:
        engine = db.create_engine(url, pool_size=1, max_overflow=0)
    except ImportError as exc:
        raise DatabaseUnavailable(f"{url}: {db.missing_driver(parsed, exc)}") from None
    try:
        with engine.connect():
            return False
    except sa.exc.OperationalError as exc:
        if not db.is_missing_database(backend, parsed.database, exc.orig):
            raise DatabaseUnavailable(f"cannot connect to {parsed.render_as_string()}: "
                                      f"{str(exc.orig).strip()}") from None
    finally:
        engine.dispose()
    _create(parsed, backend)
    return True


def _create(parsed: sa.engine.URL, backend: str) -> None:
    name = parsed.database
    if backend == "postgresql":
        server = parsed.set(database="postgres")
        statement = f'CREATE DATABASE "{name}"'
        manual = (f"createdb -h {parsed.host or 'localhost'} -p {parsed.port or 5432} "
                  f"-U {parsed.username or 'postgres'} {name}")
    else:
        server = parsed.set(database="")
        statement = f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
        manual = (f"mysql -h {parsed.host or 'localhost'} -P {parsed.port or 3306} "
                  f"-u {parsed.username or 'root'} -p -e 'CREATE DATABASE `{name}`'")
    engine = sa.create_engine(server, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            conn.exec_driver_sql(statement)
    except sa.exc.DBAPIError as exc:
        raise DatabaseUnavailable(
            f"database {name!r} does not exist and could not be created "
            f"({str(exc.orig).strip()}); create it with: {manual}") from None
    finally:
        engine.dispose()
