"""Turning OpenStack Placement error responses into typed placement errors.

Placement answers a failure with a status and a JSON body
``{"errors": [{"status", "code", "title", "detail"}]}``. The code is stable
for a few cases; the rest share ``placement.undefined_code`` and differ only
in the detail text, so those are told apart by the request kind and by
phrases of the message. The error raised keeps Placement's detail text.
"""

from __future__ import annotations

import enum
import html
import re
from typing import Any

from rtframework.placement import errors

# webob prefixes every detail with a generic sentence per status; drop it so
# the message starts with what Placement actually said.
_WEBOB_PREAMBLE = re.compile(
    r"^(The server could not comply with the request since it is either malformed or "
    r"otherwise incorrect\.|There was a conflict when trying to complete your request\.|"
    r"The resource could not be found\.)\s*",
)


class Kind(enum.Enum):
    """What a request was about; decides among errors of the same status."""

    RESOURCE_CLASS = "resource class"
    TRAIT = "trait"
    PROVIDER = "provider"
    INVENTORY = "inventory"
    PROVIDER_TRAITS = "provider traits"
    AGGREGATES = "aggregates"
    ALLOCATIONS = "allocations"
    QUERY = "query"


def detail_of(body: object, fallback: str) -> tuple[str | None, str]:
    """(code, detail) of a Placement error body, tolerating other shapes."""
    if isinstance(body, dict) and isinstance(body.get("errors"), list) and body["errors"]:
        first = body["errors"][0]
        if isinstance(first, dict):
            detail = _WEBOB_PREAMBLE.sub("", str(first.get("detail") or "")).strip()
            return first.get("code"), detail or str(first.get("title") or fallback)
    return None, fallback


_TITLE = re.compile(r"<title>(.*?)</title>", re.IGNORECASE | re.DOTALL)
_TAGS = re.compile(r"<[^>]+>")


def describe_body(resp: Any) -> str:
    """One short line for an answer that is not what was expected: its
    content type, size and (for an HTML page) its title, never the page."""
    ctype = (resp.headers.get("Content-Type") or "no content type").split(";")[0]
    text = resp.text or ""
    if "html" in ctype or text.lstrip().startswith("<"):
        found = _TITLE.search(text)
        title = found.group(1) if found else _TAGS.sub(" ", text)
        title = " ".join(html.unescape(title).split())[:80]
        return f"an HTML page ({len(resp.content)} bytes{': ' + repr(title) if title else ''})"
    first = " ".join(text.split())[:80]
    return f"{ctype} ({len(resp.content)} bytes{': ' + repr(first) if first else ''})"


def endpoint_of(resp: Any) -> str:
    return getattr(resp, "url", None) or "the placement endpoint"


def answer_error(resp: Any, what: str, expected: str, got: str) -> errors.BadAnswer:
    """The one-line error for an answer of the wrong kind or shape."""
    return errors.BadAnswer(
        f"{what}: {endpoint_of(resp)} answered HTTP {resp.status_code} with {got}; "
        f"expected a Placement JSON object with {expected or 'a body'}")


def json_body(resp: Any, what: str, expect: tuple[str, ...]) -> Any:
    """The JSON object of a successful answer having the ``expect`` keys."""
    try:
        body = resp.json()
    except ValueError:
        raise answer_error(resp, what, ", ".join(expect), describe_body(resp)) from None
    if expect and not isinstance(body, dict):
        raise answer_error(resp, what, ", ".join(expect), f"JSON {type(body).__name__}")
    missing = [k for k in expect if k not in body]
    if missing:
        raise answer_error(resp, what, ", ".join(expect),
                           f"a JSON object without {', '.join(missing)}")
    return body


def response_detail(resp: Any) -> tuple[str | None, str]:
    """(code, detail) of a failed answer: Placement's JSON error, or one
    line describing whatever else came back (a proxy's HTML page...)."""
    try:
        body = resp.json()
    except ValueError:
        body = None
    fallback = f"{resp.reason or 'error'}, {describe_body(resp)} from {endpoint_of(resp)}"
    return detail_of(body, fallback)


def error_for(status: int, code: str | None, detail: str, kind: Kind, what: str
              ) -> errors.PlacementError:
    """The typed error for one failed request.

    ``what`` names the request (method, path) and leads the message, so the
    provider, class or consumer involved is always named.
    """
    message = f"{what}: {detail}"
    low = detail.lower()
    if status == 404:
        return _not_found(low, kind)(message)
    if status == 409:
        return _conflict(code, low, kind)(message)
    if status == 400:
        return _bad_request(low, kind)(message)
    if status in (502, 503, 504):
        return errors.BackendUnavailable(f"{message} (HTTP {status})")
    return errors.PlacementError(f"{message} (HTTP {status})")


def _not_found(low: str, kind: Kind) -> type[errors.PlacementError]:
    if "resource provider" in low:
        return errors.ProviderNotFound
    if kind is Kind.RESOURCE_CLASS or "resource class" in low:
        return errors.ResourceClassNotFound
    if kind is Kind.TRAIT or "trait" in low:
        return errors.TraitNotFound
    if kind is Kind.INVENTORY and "no inventory" in low:
        return errors.NotFound
    if kind in (Kind.PROVIDER, Kind.INVENTORY, Kind.PROVIDER_TRAITS, Kind.AGGREGATES):
        return errors.ProviderNotFound
    return errors.NotFound


def _conflict(code: str | None, low: str, kind: Kind) -> type[errors.PlacementError]:
    by_code: dict[str, type[errors.PlacementError]] = {
        errors.InventoryInUse.code: errors.InventoryInUse,
        errors.ProviderInUse.code: errors.ProviderInUse,
        errors.CannotDeleteParent.code: errors.CannotDeleteParent,
    }
    if code in by_code:
        return by_code[code]
    if code == errors.GenerationConflict.code:
        if kind is Kind.ALLOCATIONS and "consumer generation conflict" in low:
            return errors.ConsumerGenerationConflict
        return errors.ProviderGenerationConflict
    if code == errors.DuplicateName.code:
        # Placement reports a taken uuid under the same code as a taken name.
        if "uuid:" in low:
            return errors.DuplicateUUID
        return errors.DuplicateName
    if "exceed the capacity" in low:
        return errors.CapacityExceeded
    if "violate inventory constraints" in low or ("inventory for" in low and "invalid" in low):
        return errors.InvalidAllocation
    if "inventory and/or allocations changed" in low:
        return errors.ProviderGenerationConflict
    if kind is Kind.RESOURCE_CLASS:
        return errors.ResourceClassInUse
    if kind is Kind.TRAIT:
        return errors.TraitInUse
    return errors.Conflict


def _bad_request(low: str, kind: Kind) -> type[errors.PlacementError]:
    if kind is Kind.RESOURCE_CLASS:
        return errors.InvalidResourceClass
    if kind is Kind.TRAIT:
        return errors.InvalidTrait
    if kind is Kind.PROVIDER and "parent provider" in low and "not exist" in low:
        return errors.ProviderNotFound
    if kind is Kind.INVENTORY:
        if "no such resource class" in low or "unknown resource class" in low:
            return errors.ResourceClassNotFound
        if "resource_class" in low or "does not match" in low:
            return errors.InvalidResourceClass
        return errors.InvalidInventory
    if kind is Kind.PROVIDER_TRAITS:
        if "no such trait" in low:
            return errors.TraitNotFound
        return errors.InvalidTrait
    if kind is Kind.ALLOCATIONS:
        if "resource provider" in low and "does not exist" in low:
            return errors.ProviderNotFound
        if "inventory for" in low or "invalid" in low and "inventory" in low:
            return errors.InvalidAllocation
    # Query filters (providers, candidates) naming what does not exist.
    if "no such trait" in low:
        return errors.TraitNotFound
    if "no such resource class" in low:
        return errors.ResourceClassNotFound
    return errors.InvalidRequest
