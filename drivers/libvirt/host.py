"""What a libvirt host has, read from libvirt's answers.

Pure functions over libvirt's XML and numbers, so that the rules (which CPUs
are VCPU or PCPU, which traits a host has) are tested without a connection.
"""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from dataclasses import dataclass

import os_traits

from rtframework.driver import DriverError
from rtframework.placement.types import Inventory
from rtframework_drivers.libvirt.cpuset import format_cpu_spec

GIB = 1024**3

# libvirt CPU feature names whose os-traits name is not the upper-cased
# feature name without punctuation.
_X86_FEATURE_ALIASES = {
    "aes": "AESNI",
    "pclmuldq": "CLMUL",
    "fma": "FMA3",
    "bmi1": "BMI",
    "sha-ni": "SHA",
    "md-clear": "INTEL_MD_CLEAR",
    "spec-ctrl": "INTEL_SPEC_CTRL",
    "pcid": "INTEL_PCID",
    "amd-ssbd": "AMD_SSBD",
    "virt-ssbd": "AMD_VIRT_SSBD",
    "ibpb": "AMD_IBPB",
    "sev": "AMD_SEV",
}

_FEATURE_PREFIX = {"x86_64": "HW_CPU_X86_", "i686": "HW_CPU_X86_", "aarch64": "HW_CPU_AARCH64_"}

# Domain-capability enums that os-traits names, and the prefix it uses.
_DOMCAPS_ENUMS = {
    ("disk", "bus"): "COMPUTE_STORAGE_BUS_",
    ("video", "modelType"): "COMPUTE_GRAPHICS_MODEL_",
}

_KNOWN_TRAITS = frozenset(os_traits.get_traits())


@dataclass(frozen=True)
class HostCapabilities:
    """The parts of ``virConnectGetCapabilities`` the driver uses."""

    arch: str
    cpu_features: frozenset[str]
    # Domain types (kvm, qemu, test...) offered for hvm guests of ``guest_arch``.
    domain_types: tuple[str, ...]
    guest_arch: str
    guest_arches: frozenset[str]


def parse_capabilities(xml: str) -> HostCapabilities:
    root = ET.fromstring(xml)
    cpu = root.find("host/cpu")
    arch = (cpu.findtext("arch") if cpu is not None else None) or ""
    features: set[str] = set()
    if cpu is not None:
        # Real hosts list <feature name='avx2'/>; the test driver <features><pae/>.
        features.update(f.get("name", "") for f in cpu.findall("feature"))
        for block in cpu.findall("features"):
            features.update(child.tag for child in block)
    offered: dict[str, list[str]] = {}
    for guest in root.findall("guest"):
        if guest.findtext("os_type") != "hvm":
            continue
        guest_arch = guest.find("arch")
        if guest_arch is None:
            continue
        types = offered.setdefault(guest_arch.get("name", ""), [])
        types.extend(d.get("type", "") for d in guest_arch.findall("domain"))
    guest_arch = arch if arch in offered else next(iter(offered), arch)
    return HostCapabilities(
        arch=arch,
        cpu_features=frozenset(f for f in features if f),
        domain_types=tuple(dict.fromkeys(offered.get(guest_arch, ()))),
        guest_arch=guest_arch,
        guest_arches=frozenset(offered),
    )


def choose_virt_type(caps: HostCapabilities, wanted: str | None, uri: str) -> str:
    """The configured domain type if offered; unset: kvm, else the first offered."""
    if wanted:
        if wanted not in caps.domain_types:
            raise DriverError(
                f"[libvirt] virt_type {wanted!r} is not offered by {uri} for "
                f"{caps.guest_arch} guests; offered: {', '.join(caps.domain_types) or 'none'}")
        return wanted
    if not caps.domain_types:
        raise DriverError(f"{uri} offers no domain type for hvm guests")
    return "kvm" if "kvm" in caps.domain_types else caps.domain_types[0]


def feature_trait(arch: str, feature: str) -> str | None:
    prefix = _FEATURE_PREFIX.get(arch)
    if prefix is None:
        return None
    suffix = _X86_FEATURE_ALIASES.get(feature) if prefix == "HW_CPU_X86_" else None
    name = prefix + (suffix or re.sub(r"[^0-9A-Za-z]", "", feature).upper())
    return name if name in _KNOWN_TRAITS else None


def capability_traits(caps: HostCapabilities) -> set[str]:
    """HW_ARCH_*, HW_CPU_* and COMPUTE_ARCH_* traits os-traits names."""
    candidates = {f"HW_ARCH_{caps.arch.upper()}"}
    candidates.update(f"COMPUTE_ARCH_{arch.upper()}" for arch in caps.guest_arches)
    candidates.update(filter(None, (feature_trait(caps.arch, f) for f in caps.cpu_features)))
    return {t for t in candidates if t in _KNOWN_TRAITS}


def domain_capability_traits(xml: str) -> set[str]:
    """Disk buses and video models a domain type supports, as COMPUTE_* traits."""
    root = ET.fromstring(xml)
    traits: set[str] = set()
    for (device, enum), prefix in _DOMCAPS_ENUMS.items():
        node = root.find(f"devices/{device}")
        if node is None or node.get("supported") != "yes":
            continue
        for value in node.findall(f"enum[@name='{enum}']/value"):
            name = prefix + re.sub(r"[^0-9A-Za-z]", "_", value.text or "").upper()
            if name in _KNOWN_TRAITS:
                traits.add(name)
    return traits


@dataclass(frozen=True)
class CPUSplit:
    vcpu: int
    pcpu: int


def split_cpus(
    online: frozenset[int],
    online_count: int,
    shared: frozenset[int] | None,
    dedicated: frozenset[int] | None,
    hostname: str,
) -> CPUSplit:
    """How many host CPUs back VCPU and PCPU.

    ``online`` holds the ids of the online CPUs (libvirt's CPU map);
    ``online_count`` is libvirt's node-info count of them, which sizes VCPU
    when no set is configured. Real hosts agree on both; libvirt's test
    driver does not (its map is a fixed 0,2,4 of 8).
    """
    shared_set, dedicated_set = shared or frozenset(), dedicated or frozenset()
    if overlap := shared_set & dedicated_set:
        raise DriverError(
            f"[libvirt] cpu_shared_set and cpu_dedicated_set both name CPUs "
            f"{format_cpu_spec(overlap)} on host {hostname}")
    for option, cpus in (("cpu_shared_set", shared_set), ("cpu_dedicated_set", dedicated_set)):
        if offline := cpus - online:
            raise DriverError(
                f"[libvirt] {option} names CPUs {format_cpu_spec(offline)} that are not "
                f"online on host {hostname} (online: {format_cpu_spec(online) or 'none'})")
    if shared:
        vcpu = len(shared_set)
    elif dedicated:
        vcpu = len(online - dedicated_set)  # once CPUs are named by id, count ids
    else:
        vcpu = online_count
    return CPUSplit(vcpu=vcpu, pcpu=len(dedicated_set))


def disk_gb(path: str) -> int:
    """Whole GiB of the filesystem holding ``path``."""
    try:
        stats = os.statvfs(path)
    except OSError as exc:
        raise DriverError(f"[libvirt] instances_path {path}: {exc.strerror}") from exc
    return stats.f_blocks * stats.f_frsize // GIB


def inventories(totals: Iterable[tuple[str, int]]) -> dict[str, Inventory]:
    """The driver's six inventory fields: the whole host, no reservation and
    no overcommit (both are the tracker's to overlay); zero totals left out."""
    return {
        rc: Inventory(total=total, reserved=0, min_unit=1, max_unit=total,
                      step_size=1, allocation_ratio=1.0)
        for rc, total in totals if total > 0
    }


@dataclass(frozen=True)
class MdevParent:
    """A physical device offering mediated devices (a GPU): the type the
    driver offers as VGPU and how many of it the device can hold in all."""

    name: str  # libvirt's node device name, e.g. pci_0000_81_00_0
    mdev_type: str
    total: int


def mdev_parents(parent_xmls: Iterable[str], mdev_xmls: Iterable[str],
                 wanted: Iterable[str]) -> list[MdevParent]:
    """The devices with an ``mdev_types`` capability, each with one type:
    the first of ``wanted`` it offers, or (``wanted`` empty) the first it
    lists. A device offering none of ``wanted`` is left out. Its total is
    the instances it can still create plus those of the type that exist
    (guests use them), so the total does not shrink as guests start.
    Sorted by device name."""
    wanted = list(wanted)
    existing: dict[tuple[str, str], int] = {}
    for xml in mdev_xmls:
        root = ET.fromstring(xml)
        parent = root.findtext("parent")
        kind = root.find("./capability[@type='mdev']/type")
        if parent and kind is not None:
            key = (parent, kind.get("id", ""))
            existing[key] = existing.get(key, 0) + 1
    found = []
    for xml in parent_xmls:
        root = ET.fromstring(xml)
        name = root.findtext("name") or ""
        offered = {}
        for kind in root.iterfind(".//capability[@type='mdev_types']/type"):
            available = kind.findtext("availableInstances")
            if kind.get("id") and available is not None and available.strip().isdigit():
                offered.setdefault(kind.get("id"), int(available))
        choice = next((m for m in wanted if m in offered), None) if wanted \
            else next(iter(offered), None)
        if choice is None:
            continue
        total = offered[choice] + existing.get((name, choice), 0)
        if total > 0:
            found.append(MdevParent(name, choice, total))
    return sorted(found, key=lambda p: p.name)
