"""``rtf boot|delete|shelve-offload|unshelve`` and ``rtf instances list``."""

from __future__ import annotations

from cliff.lister import Lister
from cliff.show import ShowOne

from rtframework.cmd import arguments
from rtframework.cmd.columns import Amounts, Optional
from rtframework.cmd.compute import tracker_for
from rtframework.compute import values as cv
from rtframework.compute.values import Flavor, Instance

_COLUMNS = ("UUID", "Name", "Host", "Node", "VM state", "Task state", "Flavor", "Resources",
            "Project")


def _row(instance: Instance) -> tuple:
    return (instance.uuid, instance.name, Optional(instance.host), Optional(instance.node),
            instance.vm_state, Optional(instance.task_state), instance.flavor.name,
            Amounts(instance.flavor.resources), instance.project_id)


def parse_resources(text: str, option: str = "--resources") -> dict[str, int]:
    """``VCPU=2,MEMORY_MB=512`` -> {"VCPU": 2, "MEMORY_MB": 512}; errors name ``option``."""
    found: dict[str, int] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        rc, sep, amount = item.partition("=")
        if not sep or not (amount.strip().isascii() and amount.strip().isdigit()):
            raise ValueError(f"{option} wants CLASS=AMOUNT[,CLASS=AMOUNT...], got {item!r}")
        rc = rc.strip().upper()
        if rc in found:
            raise ValueError(f"{option} names {rc} twice ({rc}={found[rc]} and {item}); "
                             "give each class once")
        found[rc] = int(amount)
    return found


def flavor_from_args(args) -> Flavor:
    resources = parse_resources(args.resources) if args.resources else {}
    for rc, value, option in (("VCPU", args.flavor_vcpus, "--flavor-vcpus"),
                              ("MEMORY_MB", args.flavor_memory_mb, "--flavor-memory-mb"),
                              ("DISK_GB", args.flavor_disk_gb, "--flavor-disk-gb")):
        if value is not None:
            if rc in resources:
                raise ValueError(f"{option} {value} and --resources {rc}={resources[rc]} both "
                                 f"give {rc}; give it once")
            resources[rc] = value
    if not resources:
        raise ValueError("give the flavor: --flavor-vcpus/--flavor-memory-mb/--flavor-disk-gb "
                         "or --resources CLASS=AMOUNT,...")
    name = args.flavor_name or "-".join(f"{rc.lower()}{n}" for rc, n in sorted(resources.items()))
    return Flavor(name, resources)


class _InstanceShow(ShowOne):
    def show(self, instance: Instance):
        return _COLUMNS, _row(instance)


class _OnInstance(_InstanceShow):
    """A command on one existing instance, named by uuid or unique name."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("instance", help="Instance uuid or unique name.")
        return parser


class Boot(_InstanceShow):
    """Boot an instance on a host: record, claim, spawn."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("name", type=arguments.name,
                            help="Instance name (need not be unique; a uuid is made).")
        parser.add_argument("--flavor-vcpus", type=arguments.amount, metavar="N",
                            help="VCPU of the flavor.")
        parser.add_argument("--flavor-memory-mb", type=arguments.amount, metavar="MB",
                            help="MEMORY_MB of the flavor.")
        parser.add_argument("--flavor-disk-gb", type=arguments.amount, metavar="GB",
                            help="DISK_GB of the flavor.")
        parser.add_argument("--resources", metavar="CLASS=AMOUNT[,...]",
                            help="Any resource classes, e.g. VCPU=2,MEMORY_MB=512,CUSTOM_FPGA=1.")
        parser.add_argument("--flavor-name", type=arguments.name,
                            help="Default: made from the resources.")
        parser.add_argument("--host", type=arguments.name,
                            help="Host to boot on (default: [DEFAULT] host).")
        parser.add_argument("--node", help="Node of the host (default: the first with room).")
        parser.add_argument("--project", default="demo", type=arguments.name,
                            help="Project id of the instance.")
        parser.add_argument("--user", default="demo", type=arguments.name,
                            help="User id of the instance.")
        return parser

    def take_action(self, parsed_args):
        flavor = flavor_from_args(parsed_args)
        tracker = tracker_for(self.app, parsed_args.host)
        instance = tracker.boot(parsed_args.name, flavor, project_id=parsed_args.project,
                                user_id=parsed_args.user, node=parsed_args.node)
        return self.show(instance)


class Delete(_OnInstance):
    """Delete an instance (uuid or unique name); its host's claim goes with it."""

    def take_action(self, parsed_args):
        instance = self.app.compute.lookup_instance(parsed_args.instance)
        return self.show(tracker_for(self.app, instance.host).delete(instance.uuid))


class ShelveOffload(_OnInstance):
    """Shelve an ACTIVE instance and free its host's resources."""

    def take_action(self, parsed_args):
        instance = self.app.compute.lookup_instance(parsed_args.instance)
        if instance.host is None:
            raise ValueError(f"instance {instance.uuid} is {instance.vm_state} on no host")
        return self.show(tracker_for(self.app, instance.host).shelve_offload(instance.uuid))


class Unshelve(_OnInstance):
    """Claim a shelved instance on a host again and start it."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("--host", help="Host to unshelve on (default: [DEFAULT] host).")
        parser.add_argument("--node", help="Node of the host (default: the first with room).")
        return parser

    def take_action(self, parsed_args):
        instance = self.app.compute.lookup_instance(parsed_args.instance)
        tracker = tracker_for(self.app, parsed_args.host)
        return self.show(tracker.unshelve(instance.uuid, node=parsed_args.node))


class InstancesList(Lister):
    """List instances."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("--host", help="Only instances of this host.")
        parser.add_argument("--state", action="append", choices=cv.VM_STATES,
                            dest="states", help="Only instances in this vm_state (repeatable).")
        parser.add_argument("--all", action="store_true", help="Include DELETED instances.")
        return parser

    def take_action(self, parsed_args):
        states = parsed_args.states
        if states is None and not parsed_args.all:
            states = [s for s in cv.VM_STATES if s != cv.DELETED]
        instances = self.app.compute.list_instances(host=parsed_args.host, vm_states=states)
        return _COLUMNS, [_row(i) for i in instances]
