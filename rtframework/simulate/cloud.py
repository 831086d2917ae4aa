"""The shape of the cloud a soak runs on (``rtf simulate --cloud``).

``flat``: each host one provider with VCPU, MEMORY_MB and DISK_GB.

``nested``: each host's root has VCPU only; MEMORY_MB sits on two NUMA
children, and one GPU child under each NUMA child offers VGPU; no host has
disk of its own: DISK_GB comes from one storage pool (a sharing provider)
all hosts share through an aggregate, as big as the hosts' disks together.
Flavors with a VGPU are added to the mix, so moves carry allocations split
over children and a pool that must be held once while they run.
"""

from __future__ import annotations

from collections.abc import Sequence

from rtframework import sharing
from rtframework.compute import values as v
from rtframework.placement import types as t
from rtframework.placement.backend import PlacementBackend
from rtframework.simulate import ops

FLAT, NESTED = "flat", "nested"
SHAPES = (FLAT, NESTED)

# Each soak has its own database: fixed names are unique enough.
POOL_NAME = "soak-storage-pool"
POOL_AGGREGATE = "5e3c1f0a-6b1d-4c8e-9a53-2f0d6c1e7b44"

NESTED_FLAVORS = ops.FLAVORS + (
    v.Flavor("small-vgpu", {"VCPU": 2, "MEMORY_MB": 1024, "DISK_GB": 10, "VGPU": 1}),
    v.Flavor("medium-vgpu", {"VCPU": 4, "MEMORY_MB": 2048, "DISK_GB": 20, "VGPU": 2}),
)


def _check(shape: str) -> None:
    if shape not in SHAPES:
        raise ValueError(f"unknown cloud {shape!r}; known: {', '.join(SHAPES)}")


def settings(shape: str) -> list[tuple]:
    """The fake driver's options for ``shape`` (group, option, value)."""
    _check(shape)
    if shape == FLAT:
        return []
    return [("fake_driver", "numa_nodes", 2), ("fake_driver", "gpus", 2),
            ("fake_driver", "vgpus_per_gpu", 2),
            ("fake_driver", "shared_storage_aggregate", POOL_AGGREGATE)]


def prepare(backend: PlacementBackend, shape: str, hosts: int, disk_gb: int) -> str | None:
    """Make what no host reports (the storage pool); its uuid, if any."""
    _check(shape)
    if shape == FLAT:
        return None
    return sharing.ensure_pool(backend, POOL_NAME, POOL_AGGREGATE,
                               {"DISK_GB": t.Inventory(total=hosts * disk_gb)})


def flavors(shape: str) -> Sequence[v.Flavor]:
    """The flavors the soak boots and resizes to on ``shape``."""
    _check(shape)
    return NESTED_FLAVORS if shape == NESTED else ops.FLAVORS
