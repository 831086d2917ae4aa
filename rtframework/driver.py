"""The hypervisor driver contract and its loader.

A driver tells the framework what a host has and runs instances on it;
everything about accounting (reserved host resources, allocation ratios,
claims, healing) is the framework's. Drivers are found through the
``rtframework.drivers`` entry point group and chosen by
``[DEFAULT] compute_driver``; a third-party driver is any installed package
that registers a subclass of :class:`ComputeDriver` there.
"""

from __future__ import annotations

import abc
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from oslo_config import cfg

from rtframework.provider_tree import ProviderTree

NAMESPACE = "rtframework.drivers"


class DriverError(Exception):
    """A driver cannot do what it was asked; the message is one clear line."""


class DriverLoadError(DriverError):
    """The configured driver is not installed or failed to load."""


@dataclass(frozen=True)
class InstanceSpec:
    """What a driver needs to run an instance."""

    uuid: str
    name: str
    node: str
    resources: Mapping[str, int]
    flavor_name: str = ""


class ComputeDriver(abc.ABC):
    """One hypervisor (or bare-metal conductor) on one host."""

    #: Uuids of the instances the framework records on this host, as last
    #: given by :meth:`set_known_instances`; None until someone does.
    known_instances: frozenset[str] | None = None

    def __init__(self, conf: cfg.ConfigOpts, host: str) -> None:
        self.conf = conf
        self.host = host

    def set_known_instances(self, uuids: Iterable[str]) -> None:
        """Tell the driver which instances the framework has on this host,
        before a periodic ``update_provider_tree``. A driver whose nodes can
        be taken by something the framework did not start (bare metal)
        reserves such nodes; other drivers can ignore it."""
        self.known_instances = frozenset(uuids)

    @classmethod
    def register_opts(cls, conf: cfg.ConfigOpts) -> None:  # noqa: B027 - optional
        """Register the driver's own option group on ``conf``."""

    def init_host(self) -> None:  # noqa: B027 - optional
        """Connect to the hypervisor; raise DriverError if that fails."""

    def cleanup_host(self) -> None:  # noqa: B027 - optional
        """Disconnect."""

    @abc.abstractmethod
    def get_available_nodes(self) -> list[str]:
        """Names of the nodes this host manages (one for a hypervisor)."""

    @abc.abstractmethod
    def get_node_uuid(self, nodename: str) -> str:
        """A uuid for ``nodename`` that is the same on every call and restart:
        it becomes the node's root resource provider uuid."""

    @abc.abstractmethod
    def update_provider_tree(self, tree: ProviderTree, nodename: str) -> None:
        """Fill ``tree`` with the node's root provider (already present,
        named ``nodename``): its inventory (all six fields), traits, and any
        child providers with theirs. Child uuids must be stable too."""

    @abc.abstractmethod
    def list_instances(self) -> list[str]:
        """Uuids of the instances the hypervisor actually runs."""

    @abc.abstractmethod
    def spawn(self, instance: InstanceSpec) -> None:
        """Start an instance on ``instance.node``; raise DriverError on failure."""

    @abc.abstractmethod
    def destroy(self, instance: InstanceSpec) -> None:
        """Stop and remove an instance; a missing one is not an error."""


def driver_class(name: str) -> type[ComputeDriver]:
    """The ComputeDriver subclass behind entry point ``name``."""
    from rtframework import plugins

    driver_cls = plugins.load_class(NAMESPACE, name, "compute driver", DriverLoadError)
    if not (isinstance(driver_cls, type) and issubclass(driver_cls, ComputeDriver)):
        raise DriverLoadError(f"compute driver {name!r} is not a ComputeDriver: {driver_cls!r}")
    return driver_cls


def load_driver(conf: cfg.ConfigOpts, host: str, name: str | None = None) -> ComputeDriver:
    """Instantiate the driver named by ``[DEFAULT] compute_driver``.

    The driver's options are registered and validated before it is built,
    so a bad value fails here, naming the option.
    """
    from rtframework import conf as rtconf

    driver_cls = driver_class(name or conf.compute_driver)
    driver_cls.register_opts(conf)
    rtconf.validate(conf)
    return driver_cls(conf, host)
