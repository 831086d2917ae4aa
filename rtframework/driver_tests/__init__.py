"""The compute driver contract as tests any driver can run.

A driver registered in the ``rtframework.drivers`` entry point group runs
the whole suite by naming its entry point, from any directory::

    pytest --rtf-driver NAME

Every test starts the driver as the framework does (``load_driver``, then
``init_host``) from a fresh ``ConfigOpts`` whose ``state_path`` is the
test's own directory; a "restart" is a new driver instance over the same
configuration and state. A driver that needs options to start (a
connection URI, a node catalogue) gets them from ``--rtf-config-file
PATH`` or from a ``pytest_rtf_driver_configure`` hook in the author's
``conftest.py`` (see :mod:`rtframework.driver_tests.hooks`). Without
``--rtf-driver`` the suite is not collected at all.
"""

from __future__ import annotations

import uuid


def new_uuid() -> str:
    return str(uuid.uuid4())
