"""The hooks a driver author implements (in ``conftest.py`` or a plugin)
to give the driver under test what it needs."""

from __future__ import annotations

import pathlib
from collections.abc import Mapping

import pluggy
from oslo_config import cfg

from rtframework.driver import ComputeDriver
from rtframework.provider_tree import ProviderTree

hookspec = pluggy.HookspecMarker("pytest")


@hookspec
def pytest_rtf_driver_configure(conf: cfg.ConfigOpts, state_dir: pathlib.Path,
                                name: str) -> None:
    """Set the options driver ``name`` needs on ``conf`` (``set_override``),
    creating any file they name under ``state_dir``.

    Called before every start of the driver, restarts included, on a fresh
    ``ConfigOpts`` that has the framework's and the driver's options
    registered, ``--rtf-config-file`` read and ``state_path`` set to
    ``state_dir`` (the same directory for every start within one test). It
    must give the same configuration each time, as a restarted host reads
    the same file.
    """


@hookspec(firstresult=True)
def pytest_rtf_driver_instance_resources(driver: ComputeDriver, nodename: str,
                                         tree: ProviderTree) -> Mapping[str, int] | None:
    """The resources of an instance that ``driver`` can run on ``nodename``
    (whose filled-in ``tree`` is given), or None for the kit's choice: the
    smallest amount (``min_unit``) of every class the node's providers offer.
    """
