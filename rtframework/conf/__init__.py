"""Configuration: build a ConfigOpts, register every option, validate it."""

from __future__ import annotations

import os
from collections.abc import Sequence

from oslo_config import cfg

from rtframework.conf import opts, unknown

DEFAULT_CONFIG_FILE = "/etc/rtframework/rtframework.conf"


class ConfigError(Exception):
    """A configuration file or option is invalid."""


def new_conf() -> cfg.ConfigOpts:
    """A fresh ConfigOpts with every framework option registered."""
    conf = cfg.ConfigOpts()
    opts.register_opts(conf)
    return conf


def load(
    config_files: Sequence[str] = (),
    args: Sequence[str] = (),
    conf: cfg.ConfigOpts | None = None,
) -> cfg.ConfigOpts:
    """Parse ``config_files`` and validate every registered option.

    oslo.config checks a value only when it is read, so everything is read
    here once: a bad ini fails at start-up, naming the file and option.
    """
    conf = conf or new_conf()
    try:
        conf(list(args), project="rtframework", default_config_files=list(config_files),
             validate_default_values=True)
    except cfg.ConfigFilesNotFoundError as exc:
        raise ConfigError(f"configuration file not found: {', '.join(exc.config_files)}") from exc
    except cfg.ConfigFileParseError as exc:
        # Not the line itself: it may hold a secret.
        found = exc.__context__
        where = (f"line {found.lineno}: {found.msg}" if isinstance(found, cfg.ParseError)
                 else "it is not an ini file")
        raise ConfigError(f"cannot parse {exc.config_file}, {where}") from None
    except cfg.Error as exc:
        raise ConfigError(str(exc)) from exc
    validate(conf)
    unknown.warn(conf)
    state_path = relative_to_config_file(conf, "state_path")
    if state_path != conf.state_path:
        # Every $state_path in other options follows the resolved directory.
        conf.set_override("state_path", state_path)
    return conf


def require_chosen_state_path(conf: cfg.ConfigOpts, what: str) -> None:
    """Raise ConfigError unless state_path exists or someone chose it.

    Nothing lands under state_path (databases, a driver's directories)
    unasked: a directory set in a configuration file is created, the
    built-in default only used when it exists already (a packaged install
    made it). ``what`` names what wanted to be there.
    """
    if os.path.isdir(conf.state_path):
        return
    if conf.get_location("state_path").location not in (cfg.Locations.opt_default,
                                                         cfg.Locations.set_default):
        return
    raise ConfigError(
        f"[DEFAULT] state_path is its default {conf.state_path}, which does not exist, and "
        f"{what} would be under it; rtf does not create it unasked. Name a configuration file "
        "(--config-file, $RTF_CONFIG_FILE) that sets state_path (or the [database] and "
        "[placement_database] connections and the paths of the driver), e.g. "
        "rtf --config-file etc/rtframework/walkthrough.conf ..., or create the directory.")


def relative_to_config_file(conf: cfg.ConfigOpts, name: str, group: str | None = None):
    """The value of a path option, a relative one taken from the directory
    of the configuration file that set it (so a config shipped beside its
    data files works from any working directory)."""
    value = (conf[group] if group else conf)[name]
    if not value or os.path.isabs(value):
        return value
    where = conf.get_location(name, group).detail
    if where and os.path.isfile(where):
        return os.path.join(os.path.dirname(os.path.abspath(where)), value)
    return value


def validate(conf: cfg.ConfigOpts) -> None:
    """Read every registered option so type and range errors surface now."""
    for name in conf:
        value = _read(conf, conf, name, None)
        if isinstance(value, cfg.ConfigOpts.GroupAttr):
            for option in value:
                _read(conf, value, option, name)


def _read(conf: cfg.ConfigOpts, group, option: str, group_name: str | None):
    try:
        return group[option]
    except (cfg.Error, ValueError) as exc:
        files = ", ".join(conf.config_file or []) or "the command line"
        where = f"[{group_name or 'DEFAULT'}] {option}"
        # oslo.config's message repeats the option and its location; keep
        # only the reason, the location is named here already.
        reason = str(exc).rsplit(" is not valid: ", 1)[-1]
        raise ConfigError(f"invalid value for {where} in {files}: {reason}") from exc
