"""pytest plugin of the driver conformance kit (entry point ``pytest11``).

Adds ``--rtf-driver NAME``; with it, pytest collects the kit's tests (and
the paths given, if any); without it, the kit is never collected. The
configuration files come from ``--rtf-config-file`` (the backend kit's
option, shared). The hooks a driver author implements are in
:mod:`rtframework.driver_tests.hooks`.
"""

from __future__ import annotations

import pathlib

import pytest

KIT_DIR = pathlib.Path(__file__).resolve().parent


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from rtframework.driver_tests import hooks

    pluginmanager.add_hookspecs(hooks)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("rtframework-driver", "rtframework compute driver contract")
    group.addoption("--rtf-driver", metavar="NAME", default=None,
                    help="entry point (group rtframework.drivers) of the driver the "
                    "conformance kit runs against; configuration from --rtf-config-file "
                    "or a pytest_rtf_driver_configure hook")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "driver: a test of the compute driver contract")
    if not config.getoption("rtf_driver"):
        return
    # Named alone, the kit runs by itself rather than beside the project's
    # own test paths; paths given on the command line run with it.
    if not config.option.file_or_dir:
        config.args[:] = [str(KIT_DIR)]
    elif not any(KIT_DIR.is_relative_to(pathlib.Path(arg.split("::")[0]).resolve())
                 for arg in config.args):
        config.args.append(str(KIT_DIR))


def pytest_ignore_collect(collection_path: pathlib.Path, config: pytest.Config) -> bool | None:
    if not config.getoption("rtf_driver") and collection_path.is_relative_to(KIT_DIR):
        return True
    return None


def pytest_report_header(config: pytest.Config) -> str | None:
    name = config.getoption("rtf_driver")
    return f"rtframework driver conformance kit: driver {name!r}" if name else None


@pytest.fixture
def rtf_driver_name(pytestconfig: pytest.Config) -> str:
    name = pytestconfig.getoption("rtf_driver")
    if not name:
        pytest.fail("name the driver under test: pytest --rtf-driver NAME "
                    "(an entry point in rtframework.drivers)", pytrace=False)
    return name


@pytest.fixture
def rtf_driver_harness(rtf_driver_name, tmp_path, pytestconfig):
    """Starts and restarts the driver under test over this test's state."""
    from rtframework.driver_tests.harness import DriverHarness

    state_dir = tmp_path / "state"
    state_dir.mkdir()
    harness = DriverHarness(rtf_driver_name, state_dir,
                            pytestconfig.getoption("rtf_config_file", default=[]),
                            pytestconfig.hook)
    yield harness
    harness.close()


@pytest.fixture
def rtf_driver(rtf_driver_harness):
    """The driver under test, started (``init_host``) as a host starts it."""
    from rtframework.driver import DriverError

    try:
        return rtf_driver_harness.start()
    except DriverError as exc:
        failed = str(exc)
    pytest.fail(f"driver {rtf_driver_harness.name!r} does not start: {failed} (give it its "
                "configuration with --rtf-config-file PATH or a "
                "pytest_rtf_driver_configure hook in conftest.py)", pytrace=False)


@pytest.fixture
def rtf_spawnable(rtf_driver, pytestconfig):
    """A node of the driver with room, and the resources of an instance that fits."""
    from rtframework.driver_tests.harness import node_with_room

    return node_with_room(rtf_driver, pytestconfig.hook)


@pytest.fixture
def rtf_instance(rtf_spawnable):
    """Make an InstanceSpec with a fresh uuid that fits the node with room."""
    from rtframework.driver import InstanceSpec
    from rtframework.driver_tests import new_uuid

    nodename, resources = rtf_spawnable

    def make(node: str | None = None) -> InstanceSpec:
        uuid = new_uuid()
        return InstanceSpec(uuid=uuid, name=f"rtf-kit-{uuid[:8]}", node=node or nodename,
                            resources=dict(resources), flavor_name="rtf-kit")

    return make
