"""A small cloud in one process: three fake hosts, a tracker each, on the
embedded SQLite databases of one state directory.

The demo is a list of :class:`Step`; each gets the :class:`Cluster` and
tells what it did through ``cluster.say``. Add a step (moves, for
instance) by appending to ``STEPS`` or passing your own list to
:func:`run`; the usage table is printed after the last step.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import prettytable
from oslo_config import cfg

from rtframework import conf as rtconf
from rtframework import demo_moves, demo_nested
from rtframework.compute import values as cv
from rtframework.compute.store import ComputeStore
from rtframework.compute.values import Flavor
from rtframework.driver import load_driver
from rtframework.placement import types as t
from rtframework.placement.backend import load_backend
from rtframework.tracker import NoCapacity, ResourceTracker, format_resources

HOSTS = ("host-a", "host-b", "host-c")

SMALL = Flavor("small", {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 20})
MEDIUM = Flavor("medium", {"VCPU": 4, "MEMORY_MB": 4096, "DISK_GB": 40})
LARGE = Flavor("large", {"VCPU": 8, "MEMORY_MB": 8192, "DISK_GB": 80})
FPGA = Flavor("fpga", {"VCPU": 4, "MEMORY_MB": 4096, "DISK_GB": 20, "CUSTOM_FPGA": 1})

PROJECT, USER = "demo", "demo"


def configure(conf: cfg.ConfigOpts, state_path: str) -> None:
    """Point ``conf`` at embedded databases under ``state_path`` and size
    the fake hosts, whatever the configuration files said."""
    os.makedirs(state_path, exist_ok=True)
    conf.set_override("state_path", state_path)
    conf.set_override("compute_driver", "fake")
    conf.set_override("backend", "sql", group="placement")
    for group, name in (("database", "compute.sqlite"), ("placement_database",
                                                        "placement.sqlite")):
        conf.set_override("connection", f"sqlite:///{os.path.join(state_path, name)}",
                          group=group)
    load_driver(conf, HOSTS[0])  # registers [fake_driver]
    for option, value in (("vcpus", 8), ("memory_mb", 16384), ("disk_gb", 160),
                          ("nodes", []), ("child_resource_class", "CUSTOM_FPGA"),
                          ("child_total", 1), ("fail_spawn", False)):
        conf.set_override(option, value, group="fake_driver")


class Cluster:
    """The demo's hosts, records and placement."""

    def __init__(self, conf: cfg.ConfigOpts, say: Callable[[str], None]) -> None:
        self.conf = conf
        self.say = say
        self.backend = load_backend(conf)
        self.store = ComputeStore.from_conf(conf)
        self.trackers = {
            host: ResourceTracker(conf, host, load_driver(conf, host), self.backend, self.store)
            for host in HOSTS
        }

    def add_host(self, host: str, **fake_driver) -> ResourceTracker:
        """One more host, its fake driver configured with ``fake_driver``
        on top of the demo's sizes; it shares the records and placement."""
        conf = rtconf.new_conf()
        conf([], project="rtframework", default_config_files=[])
        configure(conf, self.conf.state_path)
        for option, value in fake_driver.items():
            conf.set_override(option, value, group="fake_driver")
        tracker = ResourceTracker(conf, host, load_driver(conf, host), self.backend, self.store)
        self.trackers[host] = tracker
        return tracker

    def close(self) -> None:
        self.backend.close()
        self.store.close()

    def periodic(self, *hosts: str) -> None:
        """Run the periodic update of ``hosts`` (default: all) and tell what changed."""
        for host in hosts or HOSTS:
            tracker = self.trackers[host]
            before = (tracker.stats.reads, tracker.stats.writes)
            for report in tracker.update_available_resource():
                healed = [self.name_of(consumer) for consumer in report.healed]
                did = [f"{label} {', '.join(items)}" for label, items in (
                    ("created", report.created), ("updated", report.updated),
                    ("removed", report.removed), ("healed", healed),
                    ("reported", report.findings)) if items]
                reads = tracker.stats.reads - before[0]
                writes = tracker.stats.writes - before[1]
                self.say(f"{host} periodic: {'; '.join(did) or 'nothing to do'} "
                         f"({reads} placement reads, {writes} writes)")

    def boot(self, host: str, name: str, flavor: Flavor) -> None:
        instance = self.trackers[host].boot(name, flavor, project_id=PROJECT, user_id=USER)
        self.say(f"booted {name} ({flavor.name}: {format_resources(flavor.resources)}) "
                 f"on {host}: {instance.vm_state}")

    def provider_name(self, uuid: str) -> str:
        return self.backend.get_provider(uuid).name

    def uuid_of(self, name: str) -> str:
        return self.store.lookup_instance(name).uuid

    def name_of(self, consumer: str) -> str:
        """The instance name of a consumer, or the uuid itself."""
        found = self.store.list_instances(uuids=[consumer])
        return f"{found[0].name} ({consumer})" if found else consumer


@dataclass(frozen=True)
class Step:
    title: str
    run: Callable[[Cluster], None]


def _report(cluster: Cluster) -> None:
    cluster.periodic()


def _boot(cluster: Cluster) -> None:
    for host, name, flavor in (("host-a", "web-1", SMALL), ("host-b", "web-2", SMALL),
                               ("host-a", "db-1", LARGE), ("host-c", "ml-1", FPGA),
                               ("host-b", "batch-1", MEDIUM)):
        cluster.boot(host, name, flavor)


def _full(cluster: Cluster) -> None:
    try:
        cluster.boot("host-c", "ml-2", FPGA)
    except NoCapacity as exc:
        cluster.say(f"refused: {exc}")
    names = [i.name for i in cluster.store.list_instances()]
    cluster.say(f"nothing left behind: the records hold {', '.join(names)}")


def _quiet(cluster: Cluster) -> None:
    cluster.periodic()
    cluster.say("a second run with nothing changed:")
    cluster.periodic()


def _delete_and_shelve(cluster: Cluster) -> None:
    cluster.trackers["host-b"].delete("web-2")
    cluster.say("deleted web-2 on host-b: its claim is gone")
    cluster.trackers["host-b"].shelve_offload("batch-1")
    cluster.say("shelved batch-1 off host-b: no host holds it now")
    cluster.trackers["host-c"].unshelve("batch-1")
    cluster.say("unshelved batch-1 on host-c: claimed again there")


def _heal(cluster: Cluster) -> None:
    db1 = cluster.uuid_of("db-1")
    # As if an API had deleted it while host-a's agent was not looking.
    cluster.store.update_instance(db1, vm_state=cv.DELETED)
    cluster.say("db-1 was marked DELETED in the records behind host-a's back")
    cluster.periodic("host-a")
    stranger = str(uuid.uuid4())
    root_b = cluster.trackers["host-b"].node_root_uuid("host-b")
    cluster.backend.put_allocations(stranger, {root_b: {"VCPU": 1}}, project_id="other",
                                    user_id="other", consumer_generation=None)
    cluster.say(f"someone wrote allocations for an unknown consumer {stranger} on host-b")
    cluster.periodic("host-b")
    cluster.say("host-b left it alone and recorded an audit finding; an operator removes it:")
    held = cluster.backend.get_consumer_allocations(stranger).allocations
    cluster.backend.delete_allocations(stranger)
    removed = "; ".join(f"{format_resources(resources)} on {cluster.provider_name(p)}"
                        for p, resources in sorted(held.items()))
    cluster.say(f"  rtf allocations delete {stranger}: removed {removed}")


STEPS: list[Step] = [
    Step("Three hosts report their resources", _report),
    Step("Boot five instances", _boot),
    Step("A full node says no, and leaves nothing behind", _full),
    Step("Periodic runs", _quiet),
    Step("Delete, shelve offload, unshelve elsewhere", _delete_and_shelve),
    Step("Healing: only what the host owns and has lost", _heal),
    Step("Boot app-1, cold migrate it, then confirm", demo_moves.migrate_and_confirm),
    Step("Resize app-1, then revert", demo_moves.resize_and_revert),
    Step("Live-migrate app-1", demo_moves.live_migrate),
    Step("Resize app-1 on its own host, confirm, delete it", demo_moves.same_host_resize),
    Step("host-c goes down: evacuate batch-1, host-c returns",
         demo_moves.evacuate_from_a_down_host),
    Step("Nested hosts on a shared storage pool: move a GPU instance, resize its disk",
         demo_nested.nested_and_shared),
]


def usage_table(cluster: Cluster) -> str:
    """Used / capacity of every class on every provider of every host."""
    table = prettytable.PrettyTable(["Host", "Provider", "Class", "Used", "Capacity"])
    table.align = "l"
    for host, tracker in cluster.trackers.items():
        for nodename in tracker.nodes():
            query = t.ProviderQuery(in_tree=tracker.node_root_uuid(nodename))
            for provider in sorted(cluster.backend.list_providers(query), key=lambda p: p.name):
                inventories = cluster.backend.get_inventories(provider.uuid).inventories
                usages = cluster.backend.get_provider_usages(provider.uuid)
                for rc, inventory in sorted(inventories.items()):
                    table.add_row([host, provider.name, rc, usages.get(rc, 0),
                                   int(inventory.capacity)])
    pools = t.ProviderQuery(required_traits=frozenset({t.SHARING_TRAIT}))
    for provider in sorted(cluster.backend.list_providers(pools), key=lambda p: p.name):
        inventories = cluster.backend.get_inventories(provider.uuid).inventories
        usages = cluster.backend.get_provider_usages(provider.uuid)
        for rc, inventory in sorted(inventories.items()):
            table.add_row(["(shared)", provider.name, rc, usages.get(rc, 0),
                           int(inventory.capacity)])
    return table.get_string()


def run(conf: cfg.ConfigOpts, say: Callable[[str], None],
        steps: Sequence[Step] | None = None) -> Cluster:
    """Run ``steps`` (default: STEPS) on a new cluster, then print usages."""
    cluster = Cluster(conf, say)
    try:
        for number, step in enumerate(steps if steps is not None else STEPS, 1):
            say("")
            say(f"== {number}. {step.title}")
            step.run(cluster)
        say("")
        say("== Usage per provider")
        say(usage_table(cluster))
        findings = cluster.store.list_audit_findings()
        say(f"audit findings: {len(findings)}" + "".join(
            f"\n  {f.host}: {f.kind} {f.consumer_uuid}: {f.detail}" for f in findings))
    finally:
        cluster.close()
    return cluster
