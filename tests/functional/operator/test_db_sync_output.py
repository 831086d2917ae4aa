"""``rtf db sync`` says what it did: created, upgraded, or nothing to do."""

from __future__ import annotations

import sqlalchemy as sa

from rtframework import db
from rtframework.compute import store as compute_store
from rtframework.placement.sql import backend as sql_backend


def test_db_sync_on_an_empty_database_says_it_created_the_schema(rtf, ini, tmp_path):
    url = f"sqlite:///{tmp_path}/empty.sqlite"
    ini.write_text(f"[DEFAULT]\nstate_path = {tmp_path}\n[database]\nconnection = {url}\n"
                   f"[placement_database]\nconnection = {url}\n")
    placement = db.head_revision(sql_backend.SCRIPT_LOCATION)
    compute = db.head_revision(compute_store.SCRIPT_LOCATION)
    code, out, err = rtf("db", "sync")
    assert code == 0, err
    assert out.splitlines() == [f"placement database: schema created (revision {placement})",
                                f"compute database: schema created (revision {compute})"]
    assert "instances" in sa.inspect(sa.create_engine(url)).get_table_names()
    code, out, _ = rtf("db", "sync")
    assert out.splitlines() == [f"placement database: up to date (revision {placement})",
                                f"compute database: up to date (revision {compute})"]


def test_db_sync_from_an_older_revision_says_from_which(rtf, ini, tmp_path):
    url = f"sqlite:///{tmp_path}/old.sqlite"
    ini.write_text(f"[DEFAULT]\nstate_path = {tmp_path}\n[database]\nconnection = {url}\n"
                   f"[placement_database]\nconnection = {url}\n")
    assert rtf("db", "sync")[0] == 0
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.execute(sa.text(f"UPDATE {compute_store.VERSION_TABLE} SET version_num = '0003'"))
    engine.dispose()
    code, out, err = rtf("db", "sync")
    head = db.head_revision(compute_store.SCRIPT_LOCATION)
    assert code == 0, err
    assert out.splitlines()[1] == f"compute database: upgraded from revision 0003 to {head}"
