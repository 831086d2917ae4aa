"""Schema creation on a fresh shared database: racing starts and killed syncs.

Each test runs on the engine RTF_TEST_DB selects (a fresh database each).
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from rtframework import db
from rtframework.compute import models as compute_models
from rtframework.compute import store as compute_store
from rtframework.placement.sql import backend as sql_backend
from rtframework.placement.sql import models as placement_models
from tests.fixtures import databases

SCHEMAS = (
    (sql_backend.SCRIPT_LOCATION, sql_backend.VERSION_TABLE, placement_models.metadata),
    (compute_store.SCRIPT_LOCATION, compute_store.VERSION_TABLE, compute_models.metadata),
)


def _write_ini(path, url: str, state_path, auto_sync: bool = True) -> str:
    path.write_text(
        f"[DEFAULT]\nstate_path = {state_path}\nhost = h0\n"
        f"[database]\nconnection = {url}\nauto_sync = {auto_sync}\n"
        f"[placement_database]\nconnection = {url}\nauto_sync = {auto_sync}\n"
        "[fake_driver]\nvcpus = 4\nmemory_mb = 4096\ndisk_gb = 40\n")
    return str(path)


def _assert_one_complete_schema(url: str) -> None:
    """Both schemas at their newest revision, stamped once, nothing missing."""
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            for location, version_table, metadata in SCHEMAS:
                stamps = conn.execute(sa.text(f"SELECT version_num FROM {version_table}"))
                assert [r[0] for r in stamps] == [db.head_revision(location)]
                # Both schemas share the test database: compare each with
                # its own tables only.
                ctx = MigrationContext.configure(conn, opts={"include_name": (
                    lambda name, kind, _p, tables=metadata.tables:
                        kind != "table" or name in tables)})
                assert compare_metadata(ctx, metadata) == []
    finally:
        engine.dispose()


@pytest.mark.slow
def test_eight_processes_starting_together_on_an_empty_database_all_start(
        tmp_path, database_url):
    ini = _write_ini(tmp_path / "rtf.conf", database_url, tmp_path)
    rtf = [sys.executable, "-m", "rtframework.cmd.main", "--config-file", ini]
    commands = [rtf + ["db", "sync"]]
    commands += [rtf + ["compute", "update", "--host", f"h{n}"] for n in range(1, 8)]
    procs = [subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for c in commands]
    results = [(p.wait(timeout=300), p.stderr.read()) for p in procs]
    for p in procs:
        p.stdout.close()
        p.stderr.close()
    assert [code for code, _ in results] == [0] * 8, results
    _assert_one_complete_schema(database_url)
    engine = sa.create_engine(database_url)
    try:
        with engine.connect() as conn:
            names = conn.execute(sa.text("SELECT name FROM resource_providers")).scalars()
            assert sorted(names) == [f"h{n}" for n in range(1, 8)]
    finally:
        engine.dispose()


def _is_ddl_or_stamp(statement: str) -> bool:
    words = statement.lstrip().split(None, 1)
    if not words:
        return False
    first = words[0].upper()
    return first in ("CREATE", "ALTER", "DROP") or (
        first in ("INSERT", "UPDATE") and "alembic_version" in statement)


def _sync_killed_after(ini: str, kill_at: int) -> None:
    """Child: ``rtf db sync``, SIGKILLed right after its ``kill_at``-th
    schema statement (a DDL statement or a version stamp) was executed."""
    from rtframework.cmd.main import main

    seen = 0

    @sa.event.listens_for(sa.Engine, "after_cursor_execute")
    def _maybe_die(conn, cursor, statement, *args):
        nonlocal seen
        if _is_ddl_or_stamp(statement):
            seen += 1
            if seen == kill_at:
                os.kill(os.getpid(), signal.SIGKILL)

    os._exit(main(["--config-file", ini, "db", "sync"]))


def _run_killed_sync(ini: str, kill_at: int) -> int:
    child = multiprocessing.get_context("fork").Process(
        target=_sync_killed_after, args=(ini, kill_at))
    child.start()
    child.join(300)
    return child.exitcode


@pytest.mark.slow
def test_a_first_sync_killed_at_any_step_is_finished_by_the_next(tmp_path, rtf_cli):
    """Kill the first ``db sync`` after each schema statement in turn; the
    next ``db sync`` (or, every other time, an agent opening the databases
    with auto_sync) completes the schema. With auto_sync off, opening a
    half-built database refuses in one line naming the command to run."""
    engine_name = databases.selected_engine()
    kill_at = 1
    while True:
        with databases.temporary_database(engine_name, str(tmp_path)) as url:
            state = tmp_path / f"kill{kill_at}"
            state.mkdir()
            ini = _write_ini(state / "rtf.conf", url, state)
            code = _run_killed_sync(ini, kill_at)
            if code == 0:
                # The sync has fewer schema statements than kill_at: every
                # point has been tried.
                break
            assert code == -signal.SIGKILL
            refused = rtf_cli(_write_ini(state / "off.conf", url, state, auto_sync=False),
                              "instances", "list")
            assert refused[0] == 2  # usage: the schema needs `rtf db sync`
            assert refused[2].strip().endswith("auto_sync is off: run `rtf db sync`")
            assert len(refused[2].strip().splitlines()) == 1
            if kill_at % 2:
                assert rtf_cli(ini, "db", "sync")[0] == 0
            else:
                assert rtf_cli(ini, "compute", "update")[0] == 0
            _assert_one_complete_schema(url)
        kill_at += 1
    # Two version tables, 14 tables, 14 revisions: far more than 20 points.
    assert kill_at > 20


@pytest.fixture
def rtf_cli(capsys):
    """rtf_cli(ini, *args) -> (exit code, stdout, stderr), in this process."""
    import logging

    from rtframework.cmd.main import main

    def run(ini, *args):
        root = logging.getLogger()
        handlers = list(root.handlers)
        root.handlers[:] = []
        try:
            code = main(["--config-file", ini, *args])
        finally:
            root.handlers[:] = handlers
        out, err = capsys.readouterr()
        return code, out, err

    return run
