"""argparse types of the CLI's arguments: the checks written once.

A bad argument is refused by argparse before the command runs (exit 2,
``argument NAME: why``), so nothing is read or written, and every
database engine answers alike (SQLite does not enforce lengths).
Names and ids follow the records and Placement: 1 to 255 characters, no
leading or trailing blanks; amounts 1 to 2**31-1.
"""

from __future__ import annotations

import argparse
import uuid as uuidlib

from oslo_utils import uuidutils

from rtframework.compute import values as cv
from rtframework.placement import types as t

MAX_NAME = 255


def _shown(text: str) -> str:
    return repr(text) if len(text) <= 60 else f"{text[:40]!r}... ({len(text)} characters)"


def name(text: str) -> str:
    """An instance, flavor, host or node name, a project or user id."""
    if not text.strip():
        raise argparse.ArgumentTypeError("must not be empty")
    if len(text) > MAX_NAME:
        raise argparse.ArgumentTypeError(
            f"must be at most {MAX_NAME} characters, got {_shown(text)}")
    if text != text.strip():
        raise argparse.ArgumentTypeError(f"must not start or end with blanks: {_shown(text)}")
    return text


def uuid(text: str) -> str:
    """A uuid in any spelling Placement takes, normalized."""
    if not uuidutils.is_uuid_like(text):
        raise argparse.ArgumentTypeError(f"not a UUID: {_shown(text)}")
    return str(uuidlib.UUID(text))


def _integer(text: str, low: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {_shown(text)}") from None
    if not low <= value <= t.MAX_INT:
        raise argparse.ArgumentTypeError(f"must be from {low} to {t.MAX_INT}, got {value}")
    return value


def amount(text: str) -> int:
    """A resource amount (or a limit): an integer from 1 to 2**31-1."""
    return _integer(text, 1)


positive = amount


def generation(text: str) -> int:
    """A provider generation: an integer from 0 to 2**31-1."""
    return _integer(text, 0)


def migration_status(text: str) -> str:
    if text not in cv.MIGRATION_STATUSES:
        raise argparse.ArgumentTypeError(
            f"{_shown(text)} is not a migration status; one of "
            f"{', '.join(cv.MIGRATION_STATUSES)}")
    return text
