"""What makes a flavor one placement would refuse, said before anything is written."""

from __future__ import annotations

from rtframework.compute.values import Flavor
from rtframework.placement import errors as perrors
from rtframework.placement import types as t
from rtframework.placement import validation


def problem(flavor: Flavor) -> str | None:
    """Why placement would refuse ``flavor`` (no resources, a malformed
    class name, an amount outside 1..MAX_INT), or None."""
    if not flavor.resources:
        return f"flavor {flavor.name!r} asks for no resources"
    for rc, amount in flavor.resources.items():
        try:
            validation.check_resource_class_name(rc)
        except perrors.InvalidResourceClass as exc:
            return f"flavor {flavor.name!r}: {exc}"
        if not isinstance(amount, int) or isinstance(amount, bool) or not 1 <= amount <= t.MAX_INT:
            return (f"flavor {flavor.name!r}: {rc} amount must be an integer from 1 to "
                    f"{t.MAX_INT}, got {amount!r}")
    return None
