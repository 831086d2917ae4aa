"""When a bare-metal node must not be offered (ironic's rules).

A node is free when it is ``available`` with nothing on it, and in use (not
reserved) when it is ``active`` with an instance the framework knows. Any
other state keeps it out of scheduling by reserving its one unit.
"""

from __future__ import annotations

from rtframework_drivers.baremetal.catalogue import ACTIVE, AVAILABLE, POWER_ERROR, Node


def reservation_reason(node: Node, occupant: str | None, known: frozenset[str]) -> str | None:
    """Why ``node`` is reserved, or None if it may be offered or is in use.

    ``occupant`` is the instance on the node (from the catalogue or the
    driver's own records); ``known`` the instances the framework knows.
    """
    if node.maintenance:
        return "in maintenance"
    if node.power_state == POWER_ERROR:
        return "power state is error"
    if node.provision_state not in (AVAILABLE, ACTIVE):
        return f"provision state is {node.provision_state!r}"
    if occupant is not None and occupant not in known:
        return f"occupied by instance {occupant}, which the framework does not know"
    if node.provision_state == ACTIVE and occupant is None:
        return "active with no instance on it"
    return None
