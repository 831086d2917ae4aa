"""Options of the [fake_driver] group."""

from oslo_config import cfg

from rtframework.conf.groups import register_group
from rtframework.conf.types import MAX_INT

fake_group = cfg.OptGroup(
    "fake_driver",
    title="Fake compute driver",
    help="Sizes and nodes the fake driver reports. It runs nothing; it lets "
    "tests, demos and benchmarks exercise the accounting without a hypervisor.",
)

FAKE_OPTS = [
    cfg.IntOpt("vcpus", default=16, min=1, max=MAX_INT, help="VCPU total of each node."),
    cfg.IntOpt("memory_mb", default=32768, min=1, max=MAX_INT,
               help="MEMORY_MB total of each node."),
    cfg.IntOpt("disk_gb", default=500, min=1, max=MAX_INT, help="DISK_GB total of each node."),
    cfg.ListOpt(
        "nodes",
        default=[],
        help="Names of the nodes this host reports. Empty means one node named "
        "after the host, like a hypervisor; several names mimic a bare-metal "
        "conductor. Node names must be unique in the cloud.",
    ),
    cfg.ListOpt(
        "traits",
        default=["COMPUTE_NODE"],
        help="Traits of each node's root provider (standard or CUSTOM_*).",
    ),
    cfg.StrOpt(
        "child_resource_class",
        regex=r"^CUSTOM_[A-Z0-9_]+$",
        help="A custom resource class offered by one child provider under each "
        "node (e.g. CUSTOM_FPGA), to exercise nested providers. Unset: no child.",
    ),
    cfg.IntOpt(
        "child_total", default=2, min=1, max=MAX_INT,
        help="Total of child_resource_class on the child provider.",
    ),
    cfg.IntOpt(
        "child_count", default=1, min=1,
        help="How many identical child providers offer child_resource_class "
        "(like one per physical GPU): a request may then land on any of them. "
        "One child is named NODE_CLASS; several are NODE_CLASS_0, NODE_CLASS_1...",
    ),
    cfg.ListOpt(
        "child_traits",
        default=[],
        help="Traits of the child provider (e.g. CUSTOM_FPGA_INTEL).",
    ),
    cfg.IntOpt(
        "pcpus", default=0, min=0,
        help="PCPU (dedicated CPUs) total of each node, on the root or spread "
        "over the NUMA children.",
    ),
    cfg.IntOpt(
        "numa_nodes", default=0, min=0, max=64,
        help="NUMA children per node (NODE_NUMA0...), each with an equal share "
        "of pcpus and memory_mb (the root then reports VCPU and DISK_GB only), "
        "like a host that models its NUMA layout in placement. 0: none.",
    ),
    cfg.IntOpt(
        "gpus", default=0, min=0, max=64,
        help="Identical GPU children per node (NODE_GPU0...), each offering "
        "vgpus_per_gpu VGPU; under the NUMA children in turn when there are some.",
    ),
    cfg.IntOpt("vgpus_per_gpu", default=4, min=1, help="VGPU total of each GPU child."),
    cfg.StrOpt(
        "shared_storage_aggregate",
        help="UUID of the aggregate of a shared storage pool (a provider with "
        "MISC_SHARES_VIA_AGGREGATE, made by an operator or rtframework.sharing): each "
        "node's root joins it and reports no DISK_GB of its own, so disk is "
        "claimed from the pool. Unset: local disk.",
    ),
    cfg.BoolOpt(
        "fail_spawn",
        default=False,
        help="Make every spawn fail, to exercise the clean-up of a failed boot.",
    ),
]


def register_opts(conf: cfg.ConfigOpts) -> None:
    register_group(conf, fake_group)
    conf.register_opts(FAKE_OPTS, group=fake_group)


def list_opts():
    return [(fake_group, FAKE_OPTS)]
