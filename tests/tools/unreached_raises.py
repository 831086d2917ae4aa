"""Every ``raise`` of an rtframework error class that no test reached.

Reads the coverage data of a test run (``.coverage``, as the py3 env
writes it) and lists each raise statement of an exception class defined
in ``rtframework/`` or ``drivers/`` whose line never ran::

    python -m tests.tools.unreached_raises [--data .coverage] [--check] [-- PYTEST_ARGS ...]

With ``--check`` every unreached raise must be listed with its reason in
the table of ``tests/README.md`` (section "Raises no py3 test reaches":
one row per file, the error classes, why); the exit status is 1 if one is
not, naming it. The py3 and cover envs pass what they gave pytest after
``--`` (never parsed here, so pytest options do no harm): the check is
made only for a run of the whole suite (``tests``, the envs' default),
since a run of a few files or a selection reaches few raises.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import pathlib
import re
import sys

import coverage

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGES = {"rtframework": ROOT / "rtframework", "rtframework_drivers": ROOT / "drivers"}
README = ROOT / "tests" / "README.md"
SECTION = "## Raises no py3 test reaches"
_BUILTIN_BASES = {"Exception", "RuntimeError", "ValueError", "KeyError", "LookupError"}


def _sources() -> list[pathlib.Path]:
    return sorted(p for top in PACKAGES.values() for p in top.rglob("*.py")
                  if "migrations" not in p.parts)


def error_classes(files: list[pathlib.Path]) -> set[str]:
    """Names of exception classes defined in our packages (by base name)."""
    bases: dict[str, set[str]] = {}
    for path in files:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                bases[node.name] = {ast.unparse(b).rsplit(".", 1)[-1] for b in node.bases}
    errors: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, parents in bases.items():
            if name not in errors and parents & (errors | _BUILTIN_BASES):
                errors.add(name)
                changed = True
    return errors


def _raised_name(node: ast.Raise) -> str | None:
    exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
    if exc is None:
        return None
    return ast.unparse(exc).rsplit(".", 1)[-1]


def raises(files: list[pathlib.Path] | None = None) -> list[tuple[str, int, str]]:
    """(file, line, class) of every raise of one of our error classes."""
    files = _sources() if files is None else files
    ours = error_classes(_sources())
    found = []
    for path in files:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Raise) and _raised_name(node) in ours:
                found.append((str(path.relative_to(ROOT)), node.lineno, _raised_name(node)))
    return sorted(found)


def unreached(data_file: str = ".coverage") -> list[tuple[str, int, str]]:
    cov = coverage.Coverage(data_file=data_file)
    cov.load()
    data = cov.get_data()
    ran: dict[str, set[int]] = {}
    for measured in data.measured_files():
        path = pathlib.Path(measured).resolve()
        if path.is_relative_to(ROOT):
            ran[str(path.relative_to(ROOT))] = set(data.lines(measured) or ())
    return [(path, line, name) for path, line, name in raises()
            if line not in ran.get(path, set())]


def listed(readme: str) -> dict[str, tuple[set[str], str]]:
    """file -> (error classes, reason) from the README's table."""
    if SECTION not in readme:
        return {}
    section = readme.split(SECTION, 1)[1].split("\n## ", 1)[0]
    rows: dict[str, tuple[set[str], str]] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or not cells[0].startswith("`"):
            continue
        path = cells[0].strip("`")
        classes = set(re.findall(r"[A-Za-z_]+", cells[1]))
        rows[path] = (classes, cells[2])
    return rows


def unlisted(found: list[tuple[str, int, str]], rows: dict[str, tuple[set[str], str]],
             ) -> list[tuple[str, int, str]]:
    """The unreached raises the table gives no reason for."""
    return [(path, line, name) for path, line, name in found
            if name not in rows.get(path, (set(), ""))[0] or not rows[path][1]]


WHOLE_SUITE = (["tests"], ["tests/"])


def main(argv: list[str]) -> int:
    if "--" in argv:
        argv, pytest_args = argv[:argv.index("--")], argv[argv.index("--") + 1:]
    else:
        pytest_args = ["tests"]
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=".coverage")
    parser.add_argument("--check", action="store_true",
                        help="fail on an unreached raise the README does not list "
                             "(only when the pytest arguments after -- are: tests)")
    args = parser.parse_args(argv)
    rows = unreached(args.data)
    for path, line, name in rows:
        print(f"{path}:{line}: {name}")
    print(f"{len(rows)} raise statement(s) of rtframework error classes not reached")
    if not args.check:
        return 0
    if pytest_args not in WHOLE_SUITE:
        print(f"not the whole suite (pytest {' '.join(pytest_args)}): "
              "the list in tests/README.md is not checked")
        return 0
    if importlib.util.find_spec("libvirt") is None:
        # Its tests skip without the binding (tests/fixtures/libvirt_binding.py).
        print("libvirt-python is not installed: raises in drivers/libvirt/ are not checked")
        rows = [row for row in rows if not row[0].startswith("drivers/libvirt/")]
    missing = unlisted(rows, listed(README.read_text()))
    for path, line, name in missing:
        print(f"NOT LISTED: {path}:{line}: {name} is reached by no test and "
              f"{README.relative_to(ROOT)} gives no reason", file=sys.stderr)
    return 1 if missing else 0

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
