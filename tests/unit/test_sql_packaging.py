"""A non-editable install must ship the sql backend's migrations."""

from __future__ import annotations

import os

from setuptools.config.setupcfg import read_configuration

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_migration_versions_are_a_package_and_the_template_is_data():
    cwd = os.getcwd()
    os.chdir(ROOT)  # find: resolves relative to the project
    try:
        options = read_configuration(os.path.join(ROOT, "setup.cfg"))["options"]
    finally:
        os.chdir(cwd)
    assert "rtframework.placement.sql.migrations.versions" in options["packages"]
    assert "placement/sql/migrations/script.py.mako" in options["package_data"]["rtframework"]
