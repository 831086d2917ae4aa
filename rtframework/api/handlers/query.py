"""Query strings of GET /resource_providers and /allocation_candidates:
``resources``, ``required``, ``member_of``, ``in_tree`` (each with a
request group suffix on candidates), with Placement's version rules and
error messages."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import webob
import webob.exc
from oslo_utils import uuidutils

from rtframework.api import errors, microversion

_RESOURCE = re.compile(r"^([A-Z0-9_]+):(.*)$")


def bad(detail: str, code: str = errors.UNDEFINED) -> webob.exc.HTTPException:
    return errors.http(webob.exc.HTTPBadRequest, detail, code=code)


def invalid_query(detail: str) -> webob.exc.HTTPException:
    return bad(f"Invalid query string parameters: {detail}")


def check_keys(req: webob.Request, allowed: list[str], patterns: tuple[str, ...] = ()) -> None:
    """Placement's query schema: no key it does not know."""
    unknown = sorted(k for k in set(req.GET.keys()) if k not in allowed
                     and not any(re.match(p, k) for p in patterns))
    if unknown and patterns:
        regexes = ", ".join(repr(p) for p in patterns)
        raise invalid_query(f"'{unknown[0]}' does not match any of the regexes: {regexes}")
    if unknown:
        shown = ", ".join(repr(k) for k in unknown)
        was = "was" if len(unknown) == 1 else "were"
        raise invalid_query(
            f"Additional properties are not allowed ({shown} {was} unexpected)")


def single(req: webob.Request, key: str, first: bool = False) -> str | None:
    """The last value of ``key`` (Placement keeps the last one; the first
    for ``limit`` and ``group_policy``)."""
    values = req.GET.getall(key)
    return (values[0] if first else values[-1]) if values else None


def resources(text: str) -> dict[str, int]:
    """``VCPU:2,MEMORY_MB:1024`` -> {class: amount}."""
    if not text.strip():
        raise bad("Badly formed resources parameter. Expected resources query string "
                  "parameter in form: ?resources=VCPU:2,MEMORY_MB:1024. Got: empty string.")
    found: dict[str, int] = {}
    for part in text.split(","):
        match = _RESOURCE.match(part.strip())
        if not match:
            raise bad("Badly formed resources parameter. Expected resources query string "
                      f"parameter in form: ?resources=VCPU:2,MEMORY_MB:1024. Got: {part}.")
        rc, text = match.group(1), match.group(2)
        try:
            amount = int(text)
        except ValueError:
            raise bad(f"Requested resource {rc} expected positive integer amount. "
                      f"Got: {text}.") from None
        if rc in found:
            raise bad(f"Badly formed resources parameter. Resource class {rc} was "
                      "specified more than once.")
        if amount < 1:
            raise bad(f"Requested resource {rc} requires amount >= 1. Got: {amount}.")
        found[rc] = amount
    return found


@dataclass
class Traits:
    required: set[str] = field(default_factory=set)
    forbidden: set[str] = field(default_factory=set)
    any_of: list[frozenset[str]] = field(default_factory=list)


def traits(values: list[str], v: microversion.Version, key: str = "required",
           conflicts: bool = True) -> Traits:
    """Every ``required`` value: ``A,!B`` (forbidden from 1.22), ``in:A,B``
    (any of them, 1.39)."""
    found = Traits()
    if not v.at_least(39):
        values = values[-1:]  # the last one wins before 1.39
    for value in values:
        if value.startswith("in:"):
            if not v.at_least(39):
                raise invalid_query("The format 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' only "
                                    "supported since microversion 1.39.")
            names = [n.strip() for n in value[3:].split(",")]
            if not all(names):
                raise invalid_query(f"Expected '{key}' parameter value of the form: "
                                    "in:HW_CPU_X86_VMX,CUSTOM_MAGIC.")
            found.any_of.append(frozenset(names))
            continue
        names = [n.strip() for n in value.split(",")]
        if not all(names):
            form = "HW_CPU_X86_VMX,!CUSTOM_MAGIC" if v.at_least(22) else \
                "HW_CPU_X86_VMX,CUSTOM_MAGIC"
            raise invalid_query(f"Expected '{key}' parameter value of the form: {form}.")
        for name in names:
            if name.startswith("!") and not v.at_least(22):
                raise invalid_query(f"Expected '{key}' parameter value of the form: "
                                    f"HW_CPU_X86_VMX,CUSTOM_MAGIC. Got: {value}")
            if name.startswith("!"):
                found.forbidden.add(name[1:])
            else:
                found.required.add(name)
    if conflicts and found.required & found.forbidden:
        both = ", ".join(sorted(found.required & found.forbidden))
        raise bad(f"Conflicting required and forbidden traits found in the following "
                  f"traits keys: {key}: ({both})")
    return found


def _uuids(text: str) -> frozenset[str]:
    names = text.split(",")
    if not all(uuidutils.is_uuid_like(n) for n in names):
        raise bad("Invalid query string parameters: Expected 'member_of' parameter to "
                  "contain valid UUID(s).")
    return frozenset(names)


def member_of(values: list[str], v: microversion.Version
              ) -> tuple[tuple[frozenset[str], ...], frozenset[str]]:
    """Every ``member_of``: (any-of sets, forbidden aggregates)."""
    if len(values) > 1 and not v.at_least(24):
        raise bad("Multiple member_of parameters are not supported in the specified "
                  "microversion.")
    any_of: list[frozenset[str]] = []
    forbidden: set[str] = set()
    for value in values:
        if value.startswith("!"):
            if not v.at_least(32):
                raise bad("Forbidden member_of parameters are not supported in the "
                          "specified microversion")
            rest = value[1:]
            if rest.startswith("in:"):
                forbidden |= _uuids(rest[3:])
            elif "," in rest:
                raise bad("Multiple values for 'member_of' must be prefixed with the "
                          "'in:' or '!in:' keyword using the valid microversion.")
            else:
                forbidden |= _uuids(rest)
        elif value.startswith("in:"):
            any_of.append(_uuids(value[3:]))
        elif "," in value:
            raise bad("Multiple values for 'member_of' must be prefixed with the 'in:' "
                      "or '!in:' keyword using the valid microversion.")
        else:
            any_of.append(_uuids(value))
    return tuple(any_of), frozenset(forbidden)


def in_tree(value: str) -> str:
    if not uuidutils.is_uuid_like(value):
        raise invalid_query("Expected 'in_tree' parameter to be a format of uuid")
    return value
