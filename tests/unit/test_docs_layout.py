"""What keeps the documentation readable: a short README, a guide whose
sections take in every page dropped into them, and code that names code
rather than document sections that move."""

from __future__ import annotations

import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SECTIONS = ("user", "admin", "contributor", "reference")


def test_the_readme_stays_short():
    lines = (ROOT / "README.md").read_text().count("\n")
    assert lines <= 250, f"README.md has {lines} lines; move material into doc/source/"


@pytest.mark.parametrize("section", SECTIONS)
def test_each_guide_section_takes_in_every_page_of_its_folder(section):
    index = (ROOT / "doc" / "source" / section / "index.rst").read_text()
    assert ":glob:" in index
    assert re.search(r"^\s+\*\s*$", index, re.MULTILINE), f"{section}/index.rst does not glob *"


@pytest.mark.parametrize("top", ["rtframework", "drivers", "benchmarks"])
def test_code_does_not_cite_the_readme(top):
    citing = [str(p.relative_to(ROOT)) for p in sorted((ROOT / top).rglob("*.py"))
              if "README" in p.read_text()]
    assert citing == [], "cite the code or the benchmark, not a document's section"
