"""A host agent for the benchmarks: the fake driver, a tracker, N instances."""

from __future__ import annotations

from dataclasses import dataclass

from oslo_config import cfg

from benchmarks import environment as env
from rtframework.compute.store import ComputeStore
from rtframework.compute.values import ACTIVE, Flavor
from rtframework.placement.backend import load_backend
from rtframework.tracker import ResourceTracker
from rtframework_drivers.fake.driver import FakeDriver

PROJECT, USER = "bench-project", "bench-user"
TINY = Flavor("bench.tiny", {"VCPU": 1, "MEMORY_MB": 128, "DISK_GB": 1})


@dataclass
class Agent:
    conf: cfg.ConfigOpts
    tracker: ResourceTracker
    store: ComputeStore

    def close(self) -> None:
        self.tracker.backend.wrapped.close()
        self.store.close()


def host_conf(state_path: str, compute_url: str, placement_url: str,
              capacity: int) -> cfg.ConfigOpts:
    """A fake-driver host with room for ``capacity`` TINY instances."""
    conf = env.new_conf(
        state_path,
        DEFAULT={"reserved_host_memory_mb": 0},
        database={"connection": compute_url},
        placement_database={"connection": placement_url},
    )
    FakeDriver.register_opts(conf)
    for name, per_instance in (("vcpus", 1), ("memory_mb", 128), ("disk_gb", 1)):
        conf.set_override(name, capacity * per_instance, group="fake_driver")
    conf.set_override("initial_cpu_allocation_ratio", 1.0)
    return conf


def agent(conf: cfg.ConfigOpts, host: str) -> Agent:
    store = ComputeStore.from_conf(conf)
    tracker = ResourceTracker(conf, host, FakeDriver(conf, host), load_backend(conf, "sql"),
                              store)
    return Agent(conf, tracker, store)


def boot(tracker: ResourceTracker, count: int, prefix: str = "vm") -> None:
    """Boot through the tracker, as a user's request would."""
    for i in range(count):
        tracker.boot(f"{prefix}-{i}", TINY, project_id=PROJECT, user_id=USER)


def seed_instances(agent: Agent, count: int) -> None:
    """``count`` ACTIVE instances holding TINY on the host's first node: the
    state ``boot`` ends in, reached with two commits each instead of a boot's
    candidate search and record updates (setup, not what is measured)."""
    tracker = agent.tracker
    node = tracker.nodes()[0]
    root = tracker.node_root_uuid(node)
    backend = tracker.backend.wrapped
    for i in range(count):
        instance = agent.store.create_instance(
            f"seeded-{i}", TINY, project_id=PROJECT, user_id=USER, host=tracker.host,
            node=node, vm_state=ACTIVE)
        backend.put_allocations(instance.uuid, {root: dict(TINY.resources)},
                                project_id=PROJECT, user_id=USER, consumer_generation=None)
        tracker.driver.spawn(tracker.instance_spec(instance))
