"""MySQL/MariaDB sessions get the same settings for mysql:// and mariadb:// URLs."""

from __future__ import annotations

import logging

import pytest
import sqlalchemy as sa

from rtframework import db
from rtframework.placement.sql.backend import SQLBackend
from tests.functional.sql.conftest import make_conf


@pytest.fixture
def mysql_url(database_url, db_engine_name):
    if db_engine_name != "mysql":
        pytest.skip("MySQL/MariaDB settings")
    return database_url


@pytest.fixture
def mysql_database(mysql_url):
    """The name of the test's MySQL/MariaDB database."""
    return mysql_url.rsplit("/", 1)[1].split("?")[0]


@pytest.mark.parametrize("dialect", ["mysql+pymysql", "mariadb+pymysql"])
def test_sessions_are_read_committed_strict_and_binary(mysql_url, dialect):
    url = dialect + mysql_url[mysql_url.index("://"):]
    engine = db.create_engine(url)
    try:
        with engine.connect() as conn:
            isolation, mode, collation = conn.execute(sa.text(
                "SELECT @@session.tx_isolation, @@session.sql_mode,"
                " @@session.collation_connection")).one()
        assert engine.pool._recycle == 3600
    finally:
        engine.dispose()
    assert isolation == "READ-COMMITTED"
    assert "STRICT_ALL_TABLES" in mode.split(",")
    assert collation == "utf8mb4_bin"


def test_names_differing_in_case_are_different_on_a_case_insensitive_database(
        mysql_url, tmp_path):
    """The operator's database defaults to a case-insensitive collation;
    the tables are made binary anyway, as names are on other engines."""
    engine = sa.create_engine(mysql_url)
    try:
        with engine.connect() as conn:
            name = conn.execute(sa.text("SELECT DATABASE()")).scalar()
            conn.execute(sa.text(
                f"ALTER DATABASE `{name}` CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci"))
    finally:
        engine.dispose()
    backend = SQLBackend(make_conf(mysql_url.replace("?charset=utf8mb4", ""), str(tmp_path)))
    try:
        lower = backend.create_provider("host-a")
        upper = backend.create_provider("HOST-A")
        assert {p.name for p in backend.list_providers()} == {"host-a", "HOST-A"}
        assert lower.uuid != upper.uuid
    finally:
        backend.close()


def test_a_url_naming_several_hosts_uses_the_first_that_answers(mysql_database):
    # Port 1 on 127.0.0.1: nothing listens there (a node that is down).
    url = f"mysql+pymysql://root:@/{mysql_database}?host=127.0.0.1:1&host=127.0.0.1:3306"
    engine = db.create_engine(url)
    try:
        with engine.connect() as conn:
            assert conn.execute(sa.text("SELECT @@port")).scalar() == 3306
    finally:
        engine.dispose()


def test_hosts_that_answer_but_do_not_serve_are_waited_for_none_answering_is_not(
        mysql_database, monkeypatch):
    """A cluster out of quorum for a moment: nodes answer, none serves.
    That is "not ready" (1047), which the placement backend retries; no
    node answering is reported at once (2003)."""
    from rtframework import mysql_engine
    from rtframework.placement.sql import dberrors

    for hosts, serving, code, says in (
            (("127.0.0.1:3306", "127.0.0.1:3306"), False, 1047, "of 2 served"),
            (("127.0.0.1:1", "127.0.0.1:3306"), False, 1047, "of 2 served"),
            (("127.0.0.1:1", "127.0.0.1:2"), True, 2003, "of 2 answered")):
        monkeypatch.setattr(mysql_engine, "_serving", lambda _conn, ok=serving: ok)
        raised = _connect_error("root:", mysql_database, hosts)
        assert raised.orig.args[0] == code
        assert f"no database host {says}" in str(raised.orig)
        assert dberrors.is_transient(raised) == (code == 1047)


def _connect_error(login: str, database: str, hosts: tuple[str, ...]) -> sa.exc.OperationalError:
    """What a new connection to a URL naming ``hosts`` raises."""
    engine = db.create_engine(f"mysql+pymysql://{login}@/{database}?"
                              + "&".join(f"host={h}" for h in hosts))
    try:
        with pytest.raises(sa.exc.OperationalError) as raised:
            engine.connect()
    finally:
        engine.dispose()
    return raised.value


def _refuse_the_login_on_port(port: int, monkeypatch) -> None:
    """Connects to ``port`` fail as a server refusing the login does."""
    import pymysql

    real = pymysql.connect

    def connect(*args, **kwargs):
        if kwargs["port"] == port:
            raise pymysql.err.OperationalError(1045, "Access denied for user 'root'")
        return real(*args, **kwargs)

    monkeypatch.setattr(pymysql, "connect", connect)


def test_a_login_or_database_the_hosts_refuse_is_reported_as_that_refusal(mysql_database):
    """A mistyped password or database name is the same on every node: the
    error says so with the server's code (not "no host answered", not a
    wait for a cluster to become ready), naming each host."""
    from rtframework.placement.sql import dberrors

    for login, name, hosts, code, says in (
            ("root:wrong", mysql_database, ("127.0.0.1:3306", "127.0.0.1:3306"), 1045,
             "Access denied"),
            ("root:wrong", mysql_database, ("127.0.0.1:1", "127.0.0.1:3306"), 1045,
             "Access denied"),
            ("root:", "rtf_no_such_database", ("127.0.0.1:3306", "127.0.0.1:3306"), 1049,
             "Unknown database")):
        raised = _connect_error(login, name, hosts)
        code_found, text = raised.orig.args
        assert code_found == code
        assert "no database host of 2 accepted the login and database" in text
        assert says in text
        # Each host tried, named with its own answer.
        assert all(text.count(f"{h}: (") == hosts.count(h) for h in hosts)
        assert not dberrors.is_transient(raised)


def test_a_host_lost_while_asked_whether_it_serves_is_passed_over(
        mysql_database, monkeypatch, caplog):
    """The first node goes down between the connect and the wsrep check:
    its connection is closed and the next host serves (the log says which
    was passed over); with no next host serving, the connect fails at
    once, not retried as a lost connection whatever the lost host's error
    says: 2003 when the others are unreachable, the refusal when one
    refuses the login."""
    import pymysql

    from rtframework import mysql_engine
    from rtframework.placement.sql import dberrors

    asked = []

    def serving(conn):
        asked.append(conn)
        if len(asked) == 1:
            raise pymysql.err.OperationalError(1927, "Connection was killed")
        return True

    monkeypatch.setattr(mysql_engine, "_serving", serving)
    engine = db.create_engine(
        f"mysql+pymysql://root:@/{mysql_database}?host=127.0.0.1:3306&host=127.0.0.1:3306")
    try:
        with caplog.at_level(logging.INFO, logger="rtframework.mysql_engine"), \
                engine.connect() as conn:
            assert conn.execute(sa.text("SELECT 1")).scalar() == 1
    finally:
        engine.dispose()
    assert len(asked) == 2
    assert not asked[0].open
    assert ("database host 127.0.0.1:3306 serves; passed over: 127.0.0.1:3306: (1927, "
            "'Connection was killed')") in caplog.messages

    _refuse_the_login_on_port(2, monkeypatch)
    for other, code in (("127.0.0.1:1", 2003), ("127.0.0.1:2", 1045)):
        asked.clear()
        raised = _connect_error("root:", mysql_database, ("127.0.0.1:3306", other))
        assert raised.orig.args[0] == code
        assert raised.orig.args[1].startswith("no database host of 2 could be used: "
                                              "127.0.0.1:3306: (1927, 'Connection was killed')")
        assert not dberrors.is_transient(raised)
        assert len(asked) == 1 and not asked[0].open


def test_a_host_not_ready_outranks_one_refusing_the_login(mysql_database, monkeypatch):
    """One node refuses the login while another answers but is not ready (a
    cluster regaining quorum, a node still setting up): not ready, retried."""
    from rtframework import mysql_engine
    from rtframework.placement.sql import dberrors

    _refuse_the_login_on_port(1, monkeypatch)
    monkeypatch.setattr(mysql_engine, "_serving", lambda _conn: False)
    raised = _connect_error("root:", mysql_database, ("127.0.0.1:1", "127.0.0.1:3306"))
    assert raised.orig.args[0] == 1047
    assert "no database host of 2 served" in raised.orig.args[1]
    assert "127.0.0.1:1: (1045," in raised.orig.args[1]
    assert dberrors.is_transient(raised)


def test_a_host_with_a_port_that_is_not_a_number_is_named():
    with pytest.raises(ValueError, match="host='127.0.0.1:x' in the database URL"):
        db.create_engine("mysql+pymysql://root:@/db?host=127.0.0.1:x&host=127.0.0.1:3306")


def test_a_provider_with_many_traits_keeps_them_all_in_a_search(mysql_url, tmp_path):
    """A search reads each provider's traits as one GROUP_CONCAT string:
    the session allows far more than MySQL's default 1024 bytes, so a host
    with kilobytes of trait names shows every one of them."""
    from rtframework import mysql_engine
    from rtframework.placement import types as t

    backend = SQLBackend(make_conf(mysql_url, str(tmp_path)))
    try:
        with backend.engine.connect() as conn:
            assert conn.execute(sa.text("SELECT @@session.group_concat_max_len")).scalar() \
                == mysql_engine.GROUP_CONCAT_MAX_LEN
        rp = backend.create_provider("many-traits")
        backend.set_inventories(rp.uuid, 0, {"VCPU": t.Inventory(total=4)})
        traits = {f"CUSTOM_A_RATHER_LONG_TRAIT_NAME_NUMBER_{i:03d}" for i in range(60)}
        for name in sorted(traits):
            backend.ensure_trait(name)
        backend.set_provider_traits(rp.uuid, 1, frozenset(traits))
        found = backend.get_allocation_candidates(t.CandidateQuery(resources={"VCPU": 1}))
        assert found.provider_summaries[rp.uuid].traits == frozenset(traits)
    finally:
        backend.close()


# How a Galera node outside the primary component answers any statement.
_NOT_READY = ("SIGNAL SQLSTATE '08S01' SET MYSQL_ERRNO = 1047, "
              "MESSAGE_TEXT = 'WSREP has not yet prepared node for application use'")


def test_a_node_out_of_the_primary_component_is_left_for_a_new_connection(mysql_url, tmp_path):
    """Such a node still answers a ping, so its connection would come back
    from the pool to every retry (the last one checked in goes out first);
    the call is tried again on a new connection instead, whose connect
    picks a serving node when the URL names several."""
    backend = SQLBackend(make_conf(mysql_url, str(tmp_path)))
    try:
        created = backend.create_provider("galera-not-ready")
        used, failed = [], []

        @sa.event.listens_for(backend.engine, "before_cursor_execute", retval=True)
        def _first_read_fails(conn, cursor, statement, parameters, context, executemany):
            used.append(conn.connection.dbapi_connection)
            if not failed and statement.lstrip().upper().startswith("SELECT"):
                failed.append(used[-1])
                return _NOT_READY, {}
            return statement, parameters

        assert backend.get_provider(created.uuid).name == "galera-not-ready"
        assert failed and used[-1] is not failed[0]
        assert not failed[0].open
    finally:
        backend.close()
