"""The placement backend contract as tests any backend can run.

A third-party backend registered in the ``rtframework.placement`` entry
point group runs the whole suite by naming its entry point::

    pytest --rtf-backend NAME --pyargs rtframework.placement.contract_tests

(``--rtf-config-file PATH`` gives it a configuration file; every test gets
a fresh ``ConfigOpts`` whose ``state_path`` is the test's tmp dir.) A
project with its own fixtures can instead define a ``backend`` fixture in
its ``conftest.py`` and import the test modules: the fixtures
``make_provider`` and ``claim`` build on ``backend``.

The tests use fresh uuids and names and filter every listing, so they also
run against a long-lived service such as a real OpenStack Placement.
"""

from __future__ import annotations

import uuid


def unique(prefix: str = "rp") -> str:
    """A name no other test uses."""
    return f"{prefix}-{uuid.uuid4().hex}"


def new_uuid() -> str:
    return str(uuid.uuid4())
