"""What makes a flavor one placement would refuse, said before anything is written."""

from __future__ import annotations

import os_resource_classes as orc

from rtframework.compute.values import Flavor


def problem(flavor: Flavor) -> str | None:
    """Why placement would refuse ``flavor`` (no resources, a class that is
    neither standard nor CUSTOM_*, an amount below 1), or None."""
    if not flavor.resources:
        return f"flavor {flavor.name!r} asks for no resources"
    for rc, amount in flavor.resources.items():
        if rc not in orc.STANDARDS and not orc.is_custom(rc):
            return (f"flavor {flavor.name!r}: {rc!r} is neither a standard resource class "
                    "nor CUSTOM_*")
        if not isinstance(amount, int) or isinstance(amount, bool) or amount < 1:
            return (f"flavor {flavor.name!r}: {rc} amount must be a positive integer, "
                    f"got {amount!r}")
    return None
