"""Options of the [DEFAULT] group: identity of this host and how it is sized."""

import socket

from oslo_config import cfg

from rtframework.conf.types import MAX_INT, FiniteFloatOpt, NameOpt

host_opts = [
    NameOpt(
        "host",
        default=socket.gethostname(),
        sample_default="<hostname>",
        help="Name of this compute host. It owns the instances recorded with "
        "this host name, and only those: healing never touches another "
        "host's consumers.",
    ),
    cfg.StrOpt(
        "state_path",
        default="/var/lib/rtframework",
        help="Directory for the embedded SQLite databases and other state. "
        "A relative path is taken from the directory of the configuration "
        "file that sets it. Set in a file, the directory is created on first "
        "use; the default is used only if it exists already, so that a "
        "command run without configuration never leaves databases there.",
    ),
    NameOpt(
        "compute_driver",
        default="fake",
        help="Name of the hypervisor driver, an entry point in the "
        "'rtframework.drivers' group. Third-party drivers are accepted, so "
        "this is not limited to the bundled ones; an unknown name fails at "
        "start-up with the list of installed drivers.",
    ),
    cfg.IntOpt(
        "update_resources_interval",
        default=60,
        min=1,
        help="Seconds between two periodic resource updates of a host agent.",
    ),
    cfg.IntOpt(
        "service_down_time",
        default=60,
        min=1,
        help="Seconds without a heartbeat after which a host counts as down. "
        "Only the instances of a down (or forced-down) host may be evacuated, "
        "so that a guest never runs on two hosts at once. An agent heartbeats "
        "every third of it (never more often than once a second), whatever its "
        "passes take.",
    ),
]

reserved_opts = [
    cfg.IntOpt(
        "reserved_host_memory_mb",
        default=512,
        min=0,
        max=MAX_INT,
        help="Memory (MB) kept for the host itself, reported as reserved "
        "MEMORY_MB so that the scheduler never hands it out.",
    ),
    cfg.IntOpt(
        "reserved_host_cpus",
        default=0,
        min=0,
        max=MAX_INT,
        help="Host CPUs kept for the host itself, reported as reserved VCPU.",
    ),
    cfg.IntOpt(
        "reserved_host_disk_mb",
        default=0,
        min=0,
        max=MAX_INT,
        help="Disk (MB) kept for the host itself. Reported as reserved "
        "DISK_GB, rounded up to whole gigabytes.",
    ),
]

_RATIO_HELP = (
    "Allocation ratio of {rc} on this host's providers. Unset keeps the "
    "ratio placement already has (an operator may have set it there), or "
    "uses initial_{name}_allocation_ratio when the class is new."
)
_INITIAL_HELP = (
    "Allocation ratio of {rc} when the inventory is first created and "
    "{name}_allocation_ratio is unset."
)

ratio_opts = [
    FiniteFloatOpt(
        "cpu_allocation_ratio", min=0.0001,
        help=_RATIO_HELP.format(rc="VCPU", name="cpu"),
    ),
    FiniteFloatOpt(
        "ram_allocation_ratio", min=0.0001,
        help=_RATIO_HELP.format(rc="MEMORY_MB", name="ram"),
    ),
    FiniteFloatOpt(
        "disk_allocation_ratio", min=0.0001,
        help=_RATIO_HELP.format(rc="DISK_GB", name="disk"),
    ),
    FiniteFloatOpt(
        "initial_cpu_allocation_ratio", default=4.0, min=0.0001,
        help=_INITIAL_HELP.format(rc="VCPU", name="cpu"),
    ),
    FiniteFloatOpt(
        "initial_ram_allocation_ratio", default=1.0, min=0.0001,
        help=_INITIAL_HELP.format(rc="MEMORY_MB", name="ram"),
    ),
    FiniteFloatOpt(
        "initial_disk_allocation_ratio", default=1.0, min=0.0001,
        help=_INITIAL_HELP.format(rc="DISK_GB", name="disk"),
    ),
]

ALL_OPTS = host_opts + reserved_opts + ratio_opts


def register_opts(conf: cfg.ConfigOpts) -> None:
    conf.register_opts(ALL_OPTS)


def list_opts():
    return {"DEFAULT": ALL_OPTS}
