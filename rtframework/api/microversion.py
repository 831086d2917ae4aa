"""The ``OpenStack-API-Version: placement X.Y`` header.

Every request carries a version (the minimum, 1.0, when it names none);
``latest`` is the maximum. A version outside 1.0 to 1.39 is a 406, one
that is not ``X.Y`` a 400. Every answer says which version it was served
at and that it varies by that header.
"""

from __future__ import annotations

import re
from typing import NamedTuple

import microversion_parse

SERVICE_TYPE = "placement"
HEADER = "OpenStack-API-Version"
ENVIRON_KEY = "rtframework.api.microversion"


class Version(NamedTuple):
    major: int
    minor: int

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}"

    def at_least(self, minor: int) -> bool:
        """This version is 1.``minor`` or later."""
        return self >= Version(1, minor)


MIN = Version(1, 0)
MAX = Version(1, 39)

_FORMAT = re.compile(r"^(\d+)\.(\d+)$")


def keys_at(version: Version, since: tuple[tuple[str, int], ...]) -> list[str]:
    """The keys of ``since`` (key, first minor version that takes it) that
    ``version`` takes, in their order."""
    return [key for key, minor in since if version.at_least(minor)]


class BadVersion(ValueError):
    """Not of the form X.Y (HTTP 400)."""


class UnsupportedVersion(ValueError):
    """Well formed, but outside MIN to MAX (HTTP 406)."""


def parse(text: str | None) -> Version:
    """The version a header value asks for (None: the minimum)."""
    if text is None:
        return MIN
    text = text.strip()
    if text == "latest":
        return MAX
    match = _FORMAT.match(text)
    if not match:
        raise BadVersion(f"invalid version string: {text}")
    version = Version(int(match.group(1)), int(match.group(2)))
    if not MIN <= version <= MAX:
        raise UnsupportedVersion(f"Unacceptable version header: {text}")
    return version


def requested(headers) -> str | None:
    """The placement version named in ``headers`` (a mapping), if any."""
    return microversion_parse.get_version(headers, service_type=SERVICE_TYPE)


def of(environ) -> Version:
    """The version the request is served at."""
    return environ.get(ENVIRON_KEY, MIN)
