"""Starting, restarting and reading the driver under test, as the
framework's compute host does."""

from __future__ import annotations

import pathlib
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from oslo_config import cfg

from rtframework import conf as rtconf
from rtframework.driver import ComputeDriver, DriverError, driver_class, load_driver
from rtframework.provider_tree import ProviderData, ProviderTree

#: The host name the kit gives the driver, unless a configuration sets one.
HOST = "rtf-kit-host"


class DriverHarness:
    """Starts driver ``name`` from a fresh configuration over one state
    directory; every start after the first is a restart of the same host."""

    def __init__(self, name: str, state_dir: pathlib.Path, config_files: Sequence[str],
                 hook: Any) -> None:
        self.name = name
        self.state_dir = state_dir
        self.config_files = list(config_files)
        self._hook = hook
        self._running: list[ComputeDriver] = []
        #: Files under state_dir before the driver first started (the
        #: configuration's own, such as a catalogue the hook wrote).
        self.configured_files: frozenset[pathlib.Path] | None = None

    def driver_class(self) -> type[ComputeDriver]:
        return driver_class(self.name)

    def conf(self, **overrides: Any) -> cfg.ConfigOpts:
        """A configuration as a restarted host reads it: the framework's and
        the driver's options, the files, the author's hook, ``overrides``
        (options of [DEFAULT]) last."""
        conf = rtconf.new_conf()
        self.driver_class().register_opts(conf)
        conf([], project="rtframework", default_config_files=self.config_files)
        conf.set_default("host", HOST)
        conf.set_override("state_path", str(self.state_dir))
        self._hook.pytest_rtf_driver_configure(conf=conf, state_dir=self.state_dir,
                                               name=self.name)
        if self.configured_files is None:
            self.configured_files = frozenset(self.files())
        for option, value in overrides.items():
            conf.set_override(option, value)
        return conf

    def files(self) -> list[pathlib.Path]:
        """Every regular file under the state directory."""
        return sorted(p for p in self.state_dir.rglob("*") if p.is_file())

    def start(self, **overrides: Any) -> ComputeDriver:
        """A new driver instance, loaded and connected as a host does it."""
        conf = self.conf(**overrides)
        driver = load_driver(conf, conf.host, self.name)
        self._running.append(driver)
        driver.init_host()
        return driver

    def restart(self, old: ComputeDriver, **overrides: Any) -> ComputeDriver:
        """A new instance over the same state; the old one is disconnected
        once the new one is up (a hypervisor that lives in the test process,
        as libvirt's test:///default, keeps its guests as a real one does)."""
        new = self.start(**overrides)
        self.stop(old)
        return new

    def stop(self, driver: ComputeDriver) -> None:
        if driver in self._running:
            self._running.remove(driver)
            driver.cleanup_host()

    def close(self) -> None:
        for driver in list(self._running):
            self.stop(driver)


def fill_tree(driver: ComputeDriver, nodename: str) -> ProviderTree:
    """The node's tree as the tracker has the driver fill it in."""
    tree = ProviderTree()
    tree.new_root(nodename, driver.get_node_uuid(nodename))
    driver.update_provider_tree(tree, nodename)
    return tree


def fill_trees(driver: ComputeDriver) -> dict[str, dict[str, ProviderData]]:
    """Every node's tree as provider uuid -> data, by node name (compared
    with ``==``, a difference shows as the providers that differ)."""
    return {nodename: providers(fill_tree(driver, nodename))
            for nodename in driver.get_available_nodes()}


def providers(tree: ProviderTree) -> dict[str, ProviderData]:
    return {p.uuid: p for p in tree}


def default_resources(tree: ProviderTree) -> dict[str, int] | None:
    """The smallest instance of every class the tree offers, or None when
    some class has no room for even that (a reserved bare-metal node)."""
    wanted: dict[str, int] = {}
    for provider in tree:
        for rc, inv in provider.inventory.items():
            if rc in wanted:
                continue
            if inv.total - inv.reserved < inv.min_unit:
                return None
            wanted[rc] = inv.min_unit
    return wanted or None


def node_with_room(driver: ComputeDriver, hook: Any) -> tuple[str, Mapping[str, int]]:
    """A node of ``driver`` and the resources of an instance it can run there."""
    for nodename in driver.get_available_nodes():
        tree = fill_tree(driver, nodename)
        resources = hook.pytest_rtf_driver_instance_resources(
            driver=driver, nodename=nodename, tree=tree)
        if resources is None:
            resources = default_resources(tree)
        if resources:
            return nodename, resources
    pytest.fail(f"no node of driver {type(driver).__name__} has room for an instance; give "
                "the kit a configuration with a free node (pytest_rtf_driver_configure) or "
                "say what fits (pytest_rtf_driver_instance_resources)", pytrace=False)


def one_line(exc: DriverError) -> str:
    """The error's message, checked to be the one clear line a DriverError is."""
    message = str(exc)
    assert message.strip(), f"{type(exc).__name__} raised with no message"
    assert "\n" not in message.strip(), f"{type(exc).__name__} message spans lines: {message!r}"
    return message
