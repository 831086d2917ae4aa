"""``rtf`` run in-process on a config over the test's own database."""

from __future__ import annotations

import json
import logging

import pytest

from rtframework.cmd.main import main


@pytest.fixture
def ini(tmp_path, database_url):
    """A configuration file with two fake hosts' sizes on the test database."""
    path = tmp_path / "rtf.conf"
    path.write_text(
        f"[DEFAULT]\nstate_path = {tmp_path}\nhost = h1\nreserved_host_memory_mb = 0\n"
        "[database]\n" f"connection = {database_url}\n"
        "[placement_database]\n" f"connection = {database_url}\n"
        "[fake_driver]\nvcpus = 4\nmemory_mb = 4096\ndisk_gb = 40\n")
    return path


@pytest.fixture
def rtf(ini, capsys):
    """rtf(*args) -> (exit code, stdout, stderr), with --config-file ini."""

    def run(*args, config: bool = True):
        # Each cliff run adds its console handler to the root logger; a real
        # process runs once, so start from none and put the others back.
        root = logging.getLogger()
        handlers = list(root.handlers)
        root.handlers[:] = []
        try:
            code = main((["--config-file", str(ini)] if config else []) + list(args))
        finally:
            root.handlers[:] = handlers
        out, err = capsys.readouterr()
        return code, out, err

    return run


def as_json(rtf, *args):
    """The parsed ``-f json`` output of a command that must succeed."""
    code, out, err = rtf(*args, "-f", "json")
    assert code == 0, err
    return json.loads(out)
