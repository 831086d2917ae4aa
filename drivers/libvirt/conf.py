"""Options of the [libvirt] group."""

from oslo_config import cfg

from rtframework_drivers.libvirt.cpuset import CPUSet


def _group() -> cfg.OptGroup:
    return cfg.OptGroup(
        "libvirt",
        title="libvirt compute driver",
        help="Where the libvirt driver connects and how it splits the host's CPUs. "
        "Reserved amounts and allocation ratios are set in [DEFAULT], not here: "
        "the driver reports what the host has, the framework decides what to offer.",
    )


# For the sample-config generator. register_opts gives each ConfigOpts its
# own group object: oslo.config copies a group shallowly, so one shared
# object would share option overrides between ConfigOpts instances.
libvirt_group = _group()

LIBVIRT_OPTS = [
    cfg.StrOpt(
        "connection_uri",
        default="qemu:///system",
        help="libvirt URI of the hypervisor on this host. 'test:///default' or "
        "'test:///path/to/host.xml' select libvirt's in-process test driver, "
        "which lets the driver run without a hypervisor.",
    ),
    cfg.StrOpt(
        "virt_type",
        help="Domain type of spawned guests (kvm, qemu, ...). It must be one the "
        "host's capabilities offer. Unset: kvm when offered, otherwise the first "
        "type the host offers, so the same file works with and without KVM.",
    ),
    cfg.Opt(
        "cpu_shared_set",
        type=CPUSet(),
        help="Host CPUs (e.g. '0-3,^2,6') that back floating guest CPUs, "
        "reported as VCPU. Unset: every online CPU that is not in "
        "cpu_dedicated_set. Every CPU named must be online.",
    ),
    cfg.Opt(
        "cpu_dedicated_set",
        type=CPUSet(),
        help="Host CPUs that are handed out whole to pinned guests, reported as "
        "PCPU. Unset: the host offers no PCPU. Must not overlap cpu_shared_set, "
        "since one CPU cannot be both shared and dedicated.",
    ),
    cfg.StrOpt(
        "node_name",
        help="Name of this host's node, which names its resource provider and "
        "must be unique in the cloud. Unset: the hypervisor's hostname. Set it "
        "when hypervisors share a hostname (cloned images, containers).",
    ),
    cfg.StrOpt(
        "instances_path",
        default="$state_path/instances",
        help="Directory holding guest disks. DISK_GB is the size of the "
        "filesystem it lives on, so put it on the filesystem guests really use.",
    ),
]


def register_opts(conf: cfg.ConfigOpts) -> None:
    group = _group()
    conf.register_group(group)
    conf.register_opts(LIBVIRT_OPTS, group=group)


def list_opts():
    """(group, options) pairs, the shape oslo-config-generator iterates."""
    return [(libvirt_group, LIBVIRT_OPTS)]
