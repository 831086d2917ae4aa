"""A non-editable install must ship the sql backend's migrations."""

from __future__ import annotations

import os
import runpy

import setuptools
from setuptools.config.setupcfg import read_configuration

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _setup_py_packages(monkeypatch) -> list[str]:
    """The package list setup.py hands setuptools (the one place it is written)."""
    given: dict = {}
    monkeypatch.setattr(setuptools, "setup", lambda **kwargs: given.update(kwargs))
    monkeypatch.chdir(ROOT)  # find_packages resolves relative to the project
    runpy.run_path(os.path.join(ROOT, "setup.py"))
    return given["packages"]


def test_migration_versions_are_a_package_and_the_template_is_data(monkeypatch):
    packages = _setup_py_packages(monkeypatch)
    assert "rtframework.placement.sql.migrations.versions" in packages
    assert {"rtframework.tracker", "rtframework_drivers.fake"} <= set(packages)
    options = read_configuration(os.path.join(ROOT, "setup.cfg"))["options"]
    assert "placement/sql/migrations/script.py.mako" in options["package_data"]["rtframework"]
    # setup.cfg lists no packages that setup.py would silently replace.
    assert "packages" not in options
