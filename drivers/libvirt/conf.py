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
    cfg.ListOpt(
        "mdev_types",
        default=[],
        help="Mediated device types offered as VGPU, in order of preference "
        "(e.g. nvidia-222). Each physical device whose node device has the "
        "mdev_types capability becomes a child provider of the node with VGPU "
        "= the instances of the first of these types it offers (the ones it "
        "can still create plus those that exist); a device offering none of "
        "them is not reported. Empty: each device's first listed type. One "
        "type per device, because the types of one GPU share its memory: "
        "offering several would count it more than once.",
    ),
    cfg.StrOpt(
        "shared_storage_aggregate",
        help="UUID of the aggregate through which a shared storage pool (a "
        "sharing provider, trait MISC_SHARES_VIA_AGGREGATE, that an operator "
        "made) serves this host: the node's root joins that aggregate and "
        "reports no DISK_GB of its own, so guest disks are claimed from the "
        "pool and a move between hosts on the pool holds the disk once. Set it "
        "only when instances_path is on that shared storage. Unset: DISK_GB is "
        "the local filesystem of instances_path, on the root.",
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
