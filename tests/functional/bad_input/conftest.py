"""A small cloud on the test's database and a snapshot of every row.

A bad input must change nothing: each test compares :func:`rows` of the
database (compute records and placement share it here) before and after.
"""

from __future__ import annotations

import json
import logging

import pytest
import sqlalchemy as sa

from rtframework.cmd.main import main
from tests.functional.placement.conftest import sql_backend  # noqa: F401

BASE_INI = (
    "[DEFAULT]\nstate_path = {state}\nhost = h1\n"
    "[database]\nconnection = {url}\n"
    "[placement_database]\nconnection = {url}\n"
    "[fake_driver]\nvcpus = 4\nmemory_mb = 4096\ndisk_gb = 40\n"
)


class Cloud:
    def __init__(self, tmp_path, url, capsys):
        self.tmp_path, self.url, self.capsys = tmp_path, url, capsys
        self.ini = self.write_ini()
        self.engine = sa.create_engine(url)

    def write_ini(self, extra: str = "", name: str = "rtf.conf", base: str | None = None):
        path = self.tmp_path / name
        text = (base if base is not None else BASE_INI).format(state=self.tmp_path, url=self.url)
        path.write_text(text + extra)
        return path

    def rtf(self, *args, ini=None):
        """(exit status, stdout, stderr) of one ``rtf`` run in this process."""
        root = logging.getLogger()
        handlers = list(root.handlers)
        root.handlers[:] = []
        try:
            code = main(["--config-file", str(ini or self.ini), *args])
        finally:
            root.handlers[:] = handlers
        out, err = self.capsys.readouterr()
        return code, out, err

    def json(self, *args):
        code, out, err = self.rtf(*args, "-f", "json")
        assert code == 0, err
        return json.loads(out)

    def rows(self) -> dict[str, list[tuple]]:
        """Every row of every table, in a stable order."""
        meta = sa.MetaData()
        meta.reflect(self.engine)
        found = {}
        with self.engine.connect() as conn:
            for name, table in sorted(meta.tables.items()):
                found[name] = sorted(
                    tuple(map(repr, row)) for row in conn.execute(sa.select(table)))
        return found


@pytest.fixture
def cloud(tmp_path, database_url, capsys):
    """Host h1 reported, instance 'web' booted on it."""
    c = Cloud(tmp_path, database_url, capsys)
    c.json("compute", "update")
    c.json("boot", "web", "--flavor-vcpus", "1", "--flavor-memory-mb", "256")
    capsys.readouterr()
    yield c
    c.engine.dispose()


def one_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    assert len(lines) == 1, text
    assert "[SQL:" not in text and "sqlalche.me" not in text and "Traceback" not in text, text
    assert "<html" not in text.lower(), text
    return lines[0]
