"""Registering option groups so that each ConfigOpts keeps its own."""

from __future__ import annotations

from oslo_config import cfg


def register_group(conf: cfg.ConfigOpts, group: cfg.OptGroup) -> None:
    """Register a private copy of ``group`` on ``conf``.

    ConfigOpts.register_group keeps a shallow copy, so every ConfigOpts
    given the same module-level OptGroup shares its option table: an
    override set on one (a test, a demo, a benchmark) would show in all.
    """
    conf.register_group(cfg.OptGroup(group.name, title=group.title, help=group.help))
