"""Contract: spawn, list and destroy agree, also across a restart.

The kit's instances have fresh uuids, and only they are looked for in the
listings: a hypervisor may run guests of its own.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.driver


def _listed(driver, uuid: str) -> int:
    return list(driver.list_instances()).count(uuid)


def test_a_spawned_instance_is_listed_until_destroyed(rtf_driver, rtf_instance):
    instance = rtf_instance()
    assert _listed(rtf_driver, instance.uuid) == 0
    rtf_driver.spawn(instance)
    listed = rtf_driver.list_instances()
    assert all(isinstance(u, str) for u in listed), f"not uuid strings: {listed!r}"
    assert listed.count(instance.uuid) == 1
    rtf_driver.destroy(instance)
    assert _listed(rtf_driver, instance.uuid) == 0


def test_spawning_a_running_instance_again_keeps_one(rtf_driver, rtf_instance):
    # Recovery after a crash repeats the spawn of an unshelve or a revert.
    instance = rtf_instance()
    rtf_driver.spawn(instance)
    rtf_driver.spawn(instance)
    assert _listed(rtf_driver, instance.uuid) == 1
    rtf_driver.destroy(instance)
    assert _listed(rtf_driver, instance.uuid) == 0


def test_destroying_a_missing_instance_is_not_an_error(rtf_driver, rtf_instance):
    instance = rtf_instance()
    rtf_driver.destroy(instance)  # never spawned
    rtf_driver.spawn(instance)
    rtf_driver.destroy(instance)
    rtf_driver.destroy(instance)  # already gone
    assert _listed(rtf_driver, instance.uuid) == 0


def test_destroy_leaves_other_instances_alone(rtf_driver, rtf_instance):
    instance = rtf_instance()
    rtf_driver.spawn(instance)
    stranger = rtf_instance()
    rtf_driver.destroy(stranger)  # same node, never spawned
    assert _listed(rtf_driver, instance.uuid) == 1


def test_instances_are_the_same_after_a_restart(rtf_driver_harness, rtf_driver, rtf_instance):
    # The framework compares list_instances with its records after a
    # restart: a guest forgotten there is one it cannot account for.
    instance = rtf_instance()
    rtf_driver.spawn(instance)
    restarted = rtf_driver_harness.restart(rtf_driver)
    assert _listed(restarted, instance.uuid) == 1, (
        "an instance spawned before the restart is not listed after it")
    restarted.destroy(instance)
    again = rtf_driver_harness.restart(restarted)
    assert _listed(again, instance.uuid) == 0, (
        "an instance destroyed before the restart is listed after it")

