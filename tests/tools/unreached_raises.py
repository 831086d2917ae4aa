"""Every ``raise`` of an rtframework error class that no test reached.

Reads the coverage data of a test run (``.coverage``, as the py3 env
writes it) and lists, per file, each raise statement of an exception
class defined in ``rtframework/`` or ``drivers/`` whose line never ran::

    python -m tests.tools.unreached_raises [.coverage]

Exit status 0 either way: the list is for the test docs, where each entry
gets its reason.
"""

from __future__ import annotations

import ast
import pathlib
import sys

import coverage

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGES = {"rtframework": ROOT / "rtframework", "rtframework_drivers": ROOT / "drivers"}


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
    errors = {"Exception"}
    changed = True
    while changed:
        changed = False
        for name, parents in bases.items():
            if name not in errors and parents & (errors | {"RuntimeError", "ValueError",
                                                           "KeyError", "LookupError"}):
                errors.add(name)
                changed = True
    return errors - {"Exception"}


def _raised_name(node: ast.Raise) -> str | None:
    exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
    if exc is None:
        return None
    return ast.unparse(exc).rsplit(".", 1)[-1]


def unreached(data_file: str = ".coverage") -> list[tuple[str, int, str]]:
    files = _sources()
    ours = error_classes(files)
    cov = coverage.Coverage(data_file=data_file)
    cov.load()
    data = cov.get_data()
    measured = {pathlib.Path(f).resolve(): f for f in data.measured_files()}
    found = []
    for path in files:
        ran = set(data.lines(measured[path]) or ()) if path in measured else set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Raise):
                name = _raised_name(node)
                if name in ours and node.lineno not in ran:
                    found.append((str(path.relative_to(ROOT)), node.lineno, name))
    return sorted(found)


def main(argv: list[str]) -> int:
    rows = unreached(argv[0] if argv else ".coverage")
    for path, line, name in rows:
        print(f"{path}:{line}: {name}")
    print(f"{len(rows)} raise statement(s) of rtframework error classes not reached")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
