"""Options and groups in a configuration file that nothing reads.

oslo.config ignores them without a word, so a typo (``reserved_host_cpu``,
``[fake_drvier]``) leaves the operator believing a setting is in force.
:func:`find` lists each one with its file and line; start-up logs them as
warnings.

Known are the options registered on the ConfigOpts, every option that an
``oslo.config.opts`` entry point of rtframework's namespaces (``rtframework``
and ``rtframework.*``: the framework and each driver) lists, and the
options of the keystoneauth plugin ``[placement] auth_type`` names.
"""

from __future__ import annotations

import difflib
import importlib.metadata
import logging
from dataclasses import dataclass

from oslo_config import cfg, iniparser

from rtframework.conf import api

LOG = logging.getLogger(__name__)

NAMESPACE_PREFIX = "rtframework"


@dataclass(frozen=True)
class Unknown:
    path: str
    line: int
    group: str
    option: str | None  # None: the whole group is unknown
    suggestion: str | None = None

    def __str__(self) -> str:
        hint = f" (did you mean {self.suggestion}?)" if self.suggestion else ""
        if self.option is None:
            return (f"{self.path}:{self.line}: unknown group [{self.group}] is ignored: it is "
                    f"not an option group of rtframework or an installed driver{hint}")
        return (f"{self.path}:{self.line}: unknown option {self.option} in "
                f"[{self.group}] is ignored{hint}")


class _Lines(iniparser.BaseParser):
    """(group, option, line) of every assignment in one file."""

    def __init__(self) -> None:
        super().__init__()
        self.section = "DEFAULT"
        self.sections: dict[str, int] = {}
        self.assignments: list[tuple[str, str, int]] = []

    def new_section(self, section: str) -> None:
        self.section = section
        self.sections.setdefault(section, self.lineno)

    def _split_key_value(self, line: str):
        key, value = super()._split_key_value(line)
        if key:
            self.assignments.append((self.section, key.strip(), self.lineno))
        return key, value

    def assignment(self, key, value) -> None:
        pass

    def parse_exc(self, msg, lineno, line=None):
        return iniparser.ParseError(msg, lineno, line)


def _known(conf: cfg.ConfigOpts) -> dict[str, set[str]]:
    known: dict[str, set[str]] = {"DEFAULT": set()}
    for name in conf:
        try:
            value = conf[name]
        except cfg.Error:
            known["DEFAULT"].add(name)
            continue
        if isinstance(value, cfg.ConfigOpts.GroupAttr):
            known.setdefault(name, set()).update(value)
        else:
            known["DEFAULT"].add(name)
    for ep in importlib.metadata.entry_points(group="oslo.config.opts"):
        if ep.name != NAMESPACE_PREFIX and not ep.name.startswith(NAMESPACE_PREFIX + "."):
            continue
        try:
            listed = ep.load()()
        except Exception as exc:  # a broken driver must not stop start-up here
            LOG.debug("cannot list the options of %s: %s", ep.name, exc)
            continue
        for group, opts in listed:
            group_name = getattr(group, "name", group) or "DEFAULT"
            known.setdefault(group_name, set()).update(o.dest for o in opts)
    known.setdefault("placement", set()).update(_auth_plugin_options(conf))
    return known


def _auth_plugin_options(conf: cfg.ConfigOpts) -> set[str]:
    try:
        from keystoneauth1 import loading as ks_loading

        auth_type = conf.placement.auth_type
        if not auth_type:
            return set()
        return {o.dest for o in ks_loading.get_auth_plugin_conf_options(auth_type)}
    except Exception:  # an unknown plugin is keystoneauth's error to report
        return set()


def find(conf: cfg.ConfigOpts) -> list[Unknown]:
    """Every unknown group and option in the files ``conf`` parsed."""
    known = _known(conf)
    found: list[Unknown] = []
    for path in conf.config_file or []:
        parser = _Lines()
        try:
            with open(path, encoding="utf-8") as f:
                parser.parse(f)
        except (OSError, iniparser.ParseError, UnicodeDecodeError):
            continue  # oslo.config has reported it already
        for group, line in parser.sections.items():
            if group not in known and group not in api.LIBRARY_GROUPS:
                close = difflib.get_close_matches(group, [*known, *sorted(api.LIBRARY_GROUPS)],
                                                  n=1)
                found.append(Unknown(path, line, group, None, f"[{close[0]}]" if close else None))
        for group, option, line in parser.assignments:
            options = known.get(group)
            if options is None or option in options:
                continue
            close = difflib.get_close_matches(option, sorted(options), n=1)
            found.append(Unknown(path, line, group, option, close[0] if close else None))
    return sorted(found, key=lambda u: (u.path, u.line))


def warn(conf: cfg.ConfigOpts) -> list[Unknown]:
    found = find(conf)
    for unknown in found:
        LOG.warning("%s", unknown)
    return found
