"""Every option of the framework, for oslo-config-generator and start-up."""

from oslo_config import cfg

from rtframework.conf import api, database, default, placement

_MODULES = (default, database, placement, api)


def register_opts(conf: cfg.ConfigOpts) -> None:
    for module in _MODULES:
        module.register_opts(conf)


def list_opts():
    """(group, options) pairs, the shape oslo-config-generator expects."""
    merged: dict = {}
    for module in _MODULES:
        for group, opts in module.list_opts().items():
            merged.setdefault(group, []).extend(opts)
    return list(merged.items())
