"""Options of the [placement] group: which backend, and how moves claim."""

from keystoneauth1 import loading as ks_loading
from oslo_config import cfg

from rtframework.conf.groups import register_group
from rtframework.conf.types import NameOpt

placement_group = cfg.OptGroup(
    "placement",
    title="Placement backend",
    help="The store of resource providers and allocations that every host "
    "reports to and the scheduler reads from.",
)

PLACEMENT_OPTS = [
    NameOpt(
        "backend",
        default="sql",
        help="Placement backend, an entry point in 'rtframework.placement': "
        "'sql' (embedded or shared SQL database) or 'http' (an OpenStack "
        "Placement service).",
    ),
    cfg.StrOpt(
        "move_claim_strategy",
        default="migration",
        choices=[
            ("doubled", "The instance consumer holds source and destination "
             "during a move."),
            ("migration", "The source allocation moves to a consumer named "
             "by the migration uuid; the instance claims the destination."),
        ],
        help="How a move holds resources on both hosts while it runs.",
    ),
    cfg.IntOpt(
        "conflict_retries",
        default=10,
        min=0,
        help="How many times a write that lost a generation race is re-read "
        "and re-decided before the error is raised.",
    ),
]

ALL_OPTS = PLACEMENT_OPTS


def register_opts(conf: cfg.ConfigOpts) -> None:
    register_group(conf, placement_group)
    conf.register_opts(ALL_OPTS, group=placement_group)
    # The http backend talks through keystoneauth: its own session, auth and
    # adapter (endpoint, region, interface, retries) options, unchanged.
    ks_loading.register_session_conf_options(conf, placement_group.name)
    ks_loading.register_auth_conf_options(conf, placement_group.name)
    ks_loading.register_adapter_conf_options(conf, placement_group.name)


def list_opts():
    ks_opts = (
        ks_loading.get_session_conf_options()
        + ks_loading.get_auth_common_conf_options()
        + ks_loading.get_adapter_conf_options(include_deprecated=False)
    )
    # Auth plugins bring their own options; list the ones an operator of a
    # keystone cloud needs (password) and the one a no-auth test service
    # needs (admin_token).
    plugin_opts = []
    for name in ("password", "admin_token"):
        for opt in ks_loading.get_auth_plugin_conf_options(name):
            if all(opt.dest != o.dest for o in ks_opts + plugin_opts):
                plugin_opts.append(opt)
    return {placement_group: ALL_OPTS + ks_opts + plugin_opts}
