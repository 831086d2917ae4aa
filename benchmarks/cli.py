"""Option types shared by the benchmarks' command lines."""

from __future__ import annotations

import argparse
from collections.abc import Sequence


def names(value: str, allowed: Sequence[str], what: str) -> list[str]:
    """A comma-separated list of some of ``allowed``, else a usage error."""
    found = [n.strip() for n in value.split(",") if n.strip()]
    unknown = [n for n in found if n not in allowed]
    if unknown or not found:
        raise argparse.ArgumentTypeError(
            f"unknown {what} {', '.join(unknown) or '(none)'}; choose from {', '.join(allowed)}")
    return found


def positive(value: str) -> int:
    """A whole number of at least 1, else a usage error."""
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number of at least 1")
    return number
