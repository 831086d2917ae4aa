"""Contract: whatever fails, fails as one DriverError with a one-line
message, so that the framework can report it and carry on."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest

from rtframework.driver import ComputeDriver, DriverError, InstanceSpec
from rtframework.driver_tests import new_uuid
from rtframework.driver_tests.harness import fill_tree, one_line

pytestmark = pytest.mark.driver


def test_spawning_on_a_node_the_host_lacks_is_a_driver_error(rtf_driver, rtf_instance):
    nodes = rtf_driver.get_available_nodes()
    instance = dataclasses.replace(rtf_instance(), node="rtf-kit-no-such-node")
    assert instance.node not in nodes
    with pytest.raises(DriverError) as err:
        rtf_driver.spawn(instance)
    one_line(err.value)
    assert instance.uuid not in rtf_driver.list_instances()


def _every_call(spawnable) -> list[tuple[str, Callable[[ComputeDriver], object]]]:
    """Each call the framework makes, on the node with room."""
    nodename, resources = spawnable
    instance = InstanceSpec(uuid=new_uuid(), name="rtf-kit-broken", node=nodename,
                            resources=dict(resources), flavor_name="rtf-kit")
    return [
        ("get_available_nodes", lambda d: d.get_available_nodes()),
        ("get_node_uuid", lambda d: d.get_node_uuid(nodename)),
        ("update_provider_tree", lambda d: fill_tree(d, nodename)),
        ("list_instances", lambda d: d.list_instances()),
        ("spawn", lambda d: d.spawn(instance)),
        ("destroy", lambda d: d.destroy(instance)),
    ]


def _only_driver_errors(harness, calls, **overrides) -> list[str]:
    """Start the driver with ``overrides`` and make every call; the calls
    that raised something other than a one-line DriverError."""
    wrong = []
    try:
        driver = harness.start(**overrides)
    except DriverError as exc:
        one_line(exc)
        return []  # refusing to start is the clearest answer
    except Exception as exc:  # what the test looks for
        return [f"init_host: {type(exc).__name__}: {exc}"]
    for name, call in calls:
        try:
            call(driver)
        except DriverError as exc:
            one_line(exc)
        except Exception as exc:  # what the test looks for
            wrong.append(f"{name}: {type(exc).__name__}: {exc}")
    return wrong


def test_a_state_path_that_cannot_be_used_fails_as_driver_errors(
        rtf_driver_harness, rtf_spawnable, tmp_path):
    calls = _every_call(rtf_spawnable)
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the driver's state directory should be\n")
    wrong = _only_driver_errors(rtf_driver_harness, calls, state_path=str(blocker / "state"))
    assert not wrong, "not raised as DriverError:\n" + "\n".join(wrong)


def test_corrupt_state_files_fail_as_driver_errors(rtf_driver_harness, rtf_driver,
                                                   rtf_instance, rtf_spawnable):
    rtf_driver.spawn(rtf_instance())
    kept = [p for p in rtf_driver_harness.files()
            if p not in rtf_driver_harness.configured_files]
    if not kept:
        pytest.skip("the driver keeps no files of its own under state_path")
    rtf_driver_harness.stop(rtf_driver)
    for path in kept:
        path.write_bytes(b"\x00{[ not what this driver wrote\n")
    calls = _every_call(rtf_spawnable)
    wrong = _only_driver_errors(rtf_driver_harness, calls)
    assert not wrong, (f"with {', '.join(p.name for p in kept)} corrupt, not raised as "
                       "DriverError:\n" + "\n".join(wrong))
