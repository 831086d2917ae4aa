"""How the tracker reports an allocation change: one INFO line per
provider, one allocation history entry."""

from __future__ import annotations

import logging

from rtframework import history
from rtframework.placement import types as t
from rtframework.placement.types import format_resources

LOG = logging.getLogger(__name__)


def log_allocations(consumer: str, allocations: t.Allocations, verb: str,
                    reason: str) -> None:
    """One INFO line per provider whose allocations of ``consumer`` changed
    (and one allocation history entry: ``claimed`` adds, any other verb removes)."""
    for provider, resources in allocations.items():
        LOG.info("%s allocations of consumer %s on provider %s (%s): %s; reason: %s",
                 verb, consumer, provider, provider, format_resources(resources), reason)
    if verb == "claimed":
        history.note(consumer, {}, allocations, f"{verb}: {reason}")
    else:
        history.note(consumer, allocations, {}, f"{verb}: {reason}")
