"""The operator's reference of the exit statuses says what ``rtf --help`` says."""

from __future__ import annotations

import pathlib

from rtframework.cmd import status

DOC = pathlib.Path(__file__).parents[2] / "doc" / "source" / "reference" / "exit-statuses.rst"


def test_the_reference_holds_the_help_table():
    text = DOC.read_text()
    table = "\n".join(("   " + line) if line else "" for line in status.HELP.splitlines())
    assert table in text
