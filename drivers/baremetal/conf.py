"""Options of the [baremetal] group."""

from oslo_config import cfg


def _group() -> cfg.OptGroup:
    return cfg.OptGroup(
        "baremetal",
        title="Bare-metal compute driver",
        help="Where the bare-metal driver finds its node catalogue and keeps "
        "its own record of the instances it placed.",
    )


# For the sample-config generator. register_opts gives each ConfigOpts its
# own group object: oslo.config copies a group shallowly, so one shared
# object would share option overrides between ConfigOpts instances.
baremetal_group = _group()

BAREMETAL_OPTS = [
    cfg.StrOpt(
        "nodes_file",
        help="Node catalogue, JSON (.json) or YAML (.yaml, .yml); a relative path "
        "is taken from the directory of the configuration file that sets it. A list of "
        "nodes (or {nodes: [...]}) with uuid, name, resource_class, "
        "properties, provision_state, maintenance, power_state, traits and "
        "instance_uuid. It is read again on every periodic update, so edits "
        "take effect at the next one; the driver never writes it.",
    ),
    cfg.StrOpt(
        "state_file",
        default="$state_path/baremetal_instances.json",
        help="Where the driver records which instance it put on which node, "
        "so that a restart remembers them without writing to nodes_file.",
    ),
]


def register_opts(conf: cfg.ConfigOpts) -> None:
    group = _group()
    conf.register_group(group)
    conf.register_opts(BAREMETAL_OPTS, group=group)


def list_opts():
    """(group, options) pairs, the shape oslo-config-generator iterates."""
    return [(baremetal_group, BAREMETAL_OPTS)]
