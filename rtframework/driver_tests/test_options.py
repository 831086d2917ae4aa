"""Contract: the driver's options are its own group's, described, and in
the sample configuration oslo-config-generator writes."""

from __future__ import annotations

import importlib.metadata
import io
import re

import pytest
from oslo_config import cfg, generator

from rtframework import conf as rtconf

pytestmark = pytest.mark.driver

# "#name = default" (or "#name =" for an empty one) in a generated sample.
_SAMPLE_OPTION = re.compile(r"^#([A-Za-z0-9_-]+) =(?: |$)")


def _names(conf: cfg.ConfigOpts) -> set[tuple[str, str]]:
    """(group, option) of every option registered on ``conf``."""
    found = set()
    for name in conf:
        value = conf[name]
        if isinstance(value, cfg.ConfigOpts.GroupAttr):
            found.update((name, option) for option in value)
        else:
            found.add(("DEFAULT", name))
    return found


@pytest.fixture
def driver_options(rtf_driver_harness) -> set[tuple[str, str]]:
    """(group, option) of every option the driver registers."""
    framework = rtconf.new_conf()
    with_driver = rtconf.new_conf()
    rtf_driver_harness.driver_class().register_opts(with_driver)
    registered = _names(with_driver) - _names(framework)
    if not registered:
        pytest.skip("the driver registers no options")
    return registered


def test_registering_the_options_again_is_harmless(rtf_driver_harness, driver_options):
    conf = rtconf.new_conf()
    driver_class = rtf_driver_harness.driver_class()
    driver_class.register_opts(conf)
    driver_class.register_opts(conf)  # every load_driver on a shared conf does it
    assert _names(conf) - _names(rtconf.new_conf()) == driver_options


def test_options_are_in_groups_of_the_drivers_own(driver_options):
    framework_groups = {group for group, _ in _names(rtconf.new_conf())}
    taken = sorted(f"[{g}] {o}" for g, o in driver_options if g in framework_groups)
    assert not taken, ("options registered in the framework's groups (a driver's options "
                       f"belong in a group of its own): {', '.join(taken)}")


def _listed_opts() -> dict[str, dict[tuple[str, str], cfg.Opt]]:
    """namespace -> (group, option) -> Opt, for every oslo.config.opts entry point."""
    listed: dict[str, dict[tuple[str, str], cfg.Opt]] = {}
    for ep in importlib.metadata.entry_points(group="oslo.config.opts"):
        try:
            pairs = ep.load()()
        except Exception:  # another package's broken entry point
            continue
        opts = listed.setdefault(ep.name, {})
        for group, group_opts in pairs:
            group_name = getattr(group, "name", group) or "DEFAULT"
            for opt in group_opts:
                opts[(group_name, opt.dest)] = opt
    return listed


def test_every_option_is_listed_for_the_generator_with_help(driver_options):
    listed = _listed_opts()
    everywhere = {key: opt for opts in listed.values() for key, opt in opts.items()}
    missing = sorted(f"[{g}] {o}" for g, o in driver_options if (g, o) not in everywhere)
    assert not missing, (
        "registered but listed by no 'oslo.config.opts' entry point, so no sample "
        f"configuration shows them: {', '.join(missing)}")
    bare = sorted(f"[{g}] {o}" for g, o in driver_options if not everywhere[(g, o)].help)
    assert not bare, f"options without help text: {', '.join(bare)}"


def test_every_option_is_in_the_generated_sample(driver_options):
    listed = _listed_opts()
    namespaces = sorted(ns for ns, opts in listed.items() if driver_options & opts.keys())
    gconf = cfg.ConfigOpts()
    generator.register_cli_opts(gconf)
    gconf([f"--namespace={ns}" for ns in namespaces])
    out = io.StringIO()
    generator.generate(gconf, output_file=out)
    sections: dict[str, set[str]] = {}
    current = None
    for line in out.getvalue().splitlines():
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], set())
        elif current is not None and (option := _SAMPLE_OPTION.match(line)):
            current.add(option.group(1))
    absent = sorted(f"[{g}] {o}" for g, o in driver_options if o not in sections.get(g, ()))
    assert not absent, (f"not in the sample generated from {', '.join(namespaces)}: "
                        f"{', '.join(absent)}")
