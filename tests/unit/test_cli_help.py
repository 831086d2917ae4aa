"""Every command has a whole one-line summary and every option a help text."""

from __future__ import annotations

import argparse
import importlib.metadata

import pytest

from rtframework.cmd.main import RtfApp

COMMANDS = sorted(importlib.metadata.entry_points(group="rtframework.cli"),
                  key=lambda ep: ep.name)


@pytest.fixture(scope="module")
def app():
    return RtfApp()


@pytest.mark.parametrize("entry_point", COMMANDS, ids=[ep.name for ep in COMMANDS])
def test_summary_is_one_whole_line(app, entry_point):
    command = entry_point.load()(app, None)
    summary = command.get_description().split("\n\n")[0]
    assert summary.strip(), f"{entry_point.name} has no description"
    assert "\n" not in summary.strip(), (
        f"rtf help cuts {entry_point.name}'s summary after its first line: {summary!r}")
    assert len(summary) <= 76, f"{entry_point.name}: summary longer than a help line"


@pytest.mark.parametrize("entry_point", COMMANDS, ids=[ep.name for ep in COMMANDS])
def test_every_argument_has_help(app, entry_point):
    command = entry_point.load()(app, None)
    parser = command.get_parser(f"rtf {entry_point.name.replace('_', ' ')}")
    # Output formatting options are cliff's own (some undocumented there).
    base = next(cls for cls in type(command).__mro__ if cls.__module__.startswith("cliff."))
    cliffs = {o for a in base.get_parser(command, "x")._actions for o in a.option_strings}
    missing = [action.option_strings[0] if action.option_strings else action.dest
               for action in parser._actions
               if not isinstance(action, argparse._HelpAction)
               and not set(action.option_strings) & cliffs
               and (not action.help or action.help == argparse.SUPPRESS)]
    assert not missing, f"rtf {entry_point.name}: no help for {', '.join(missing)}"
