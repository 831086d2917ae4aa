"""A backend runs the shipped contract suite by naming its entry point."""

from __future__ import annotations

import subprocess
import sys

import pytest


def _pytest(tmp_path, *args):
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
         *args, "--pyargs", "rtframework.placement.contract_tests", "-k", "spellings"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300)


@pytest.mark.sqlite_only
def test_naming_the_entry_point_runs_the_suite_on_that_backend(tmp_path):
    done = _pytest(tmp_path, "--rtf-backend", "sql")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed" in done.stdout


@pytest.mark.sqlite_only
def test_without_a_backend_the_suite_says_how_to_name_one(tmp_path):
    done = _pytest(tmp_path)
    assert done.returncode == 1
    assert "name the backend under test: pytest --rtf-backend NAME" in done.stdout


@pytest.mark.sqlite_only
def test_an_unknown_backend_lists_the_installed_ones(tmp_path):
    done = _pytest(tmp_path, "--rtf-backend", "etcd")
    assert done.returncode == 1
    assert "unknown placement backend 'etcd'; installed:" in done.stdout
    assert "sql" in done.stdout.split("installed:", 1)[1]
