"""Contract, as the framework sees it: a host's periodic run puts every
node's tree into placement, and the next run, in the same process or
after a restart, writes nothing."""

from __future__ import annotations

import pytest

from rtframework.compute.store import ComputeStore
from rtframework.driver_tests.harness import fill_trees
from rtframework.placement import types as t
from rtframework.placement.backend import load_backend
from rtframework.tracker import ResourceTracker

pytestmark = pytest.mark.driver


@pytest.fixture
def records(rtf_driver):
    """Placement and the compute records, embedded SQLite under state_path
    unless the configuration names databases."""
    backend = load_backend(rtf_driver.conf)
    compute = ComputeStore.from_conf(rtf_driver.conf)
    yield backend, compute
    compute.close()
    backend.close()


def _run(driver, records):
    tracker = ResourceTracker(driver.conf, driver.host, driver, *records)
    reports = tracker.update_available_resource()
    errors = [f"{r.nodename}: {e}" for r in reports for e in r.errors]
    assert not errors, "the periodic run failed:\n" + "\n".join(errors)
    return tracker, reports


def test_a_periodic_run_puts_every_node_tree_into_placement(rtf_driver, records):
    backend, _ = records
    _, reports = _run(rtf_driver, records)
    trees = fill_trees(rtf_driver)
    assert {r.nodename for r in reports} == set(trees)
    for nodename, tree in trees.items():
        root = rtf_driver.get_node_uuid(nodename)
        placed = {p.uuid: p for p in backend.list_providers(t.ProviderQuery(in_tree=root))}
        assert placed.keys() == tree.keys(), f"node {nodename!r}"
        for uuid, provider in tree.items():
            assert placed[uuid].name == provider.name
            totals = {rc: inv.total
                      for rc, inv in backend.get_inventories(uuid).inventories.items()}
            assert totals == {rc: inv.total for rc, inv in provider.inventory.items()}, (
                f"node {nodename!r}, provider {provider.name!r}")


def test_the_next_run_writes_nothing_even_after_a_restart(rtf_driver_harness, rtf_driver,
                                                          records):
    tracker, _ = _run(rtf_driver, records)
    tracker.stats.reset()
    tracker.update_available_resource()
    assert tracker.stats.writes == 0, f"a run with nothing changed wrote: {tracker.stats}"
    restarted = rtf_driver_harness.restart(rtf_driver)
    tracker, reports = _run(restarted, records)
    changed = [f"{r.nodename}: created {r.created}, updated {r.updated}, removed {r.removed}"
               for r in reports if r.created or r.updated or r.removed]
    assert not changed, "after a restart the first run changed placement:\n" + "\n".join(changed)
