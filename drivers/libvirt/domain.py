"""The domain XML of one instance."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass

from rtframework_drivers.libvirt.cpuset import format_cpu_spec, parse_cpu_spec

METADATA_NS = "https://rtframework.invalid/xmlns/libvirt/instance/1"
_KIB = {"KiB": 1, "k": 1, "MiB": 1024, "M": 1024, "GiB": 1024**2, "G": 1024**2}


@dataclass(frozen=True)
class DomainSpec:
    uuid: str
    name: str
    virt_type: str
    arch: str
    vcpus: int
    memory_mb: int
    # Host CPUs the guest may run on; empty: anywhere.
    cpuset: frozenset[int] = frozenset()
    flavor_name: str = ""


def same_size(xml: str, spec: DomainSpec) -> bool:
    """Whether a domain's XML already has ``spec``'s CPUs, memory and pinning."""
    domain = ET.fromstring(xml)
    vcpu, memory = domain.find("vcpu"), domain.find("memory")
    if vcpu is None or memory is None:
        return False
    kib = int(memory.text or 0) * _KIB.get(memory.get("unit", "KiB"), 0)
    pinned = vcpu.get("cpuset")
    cpuset = parse_cpu_spec(pinned) if pinned else frozenset()
    return (int(vcpu.text or 0), kib, cpuset) == (spec.vcpus, spec.memory_mb * 1024, spec.cpuset)


def build_domain_xml(spec: DomainSpec) -> str:
    domain = ET.Element("domain", type=spec.virt_type)
    ET.SubElement(domain, "name").text = spec.name
    ET.SubElement(domain, "uuid").text = spec.uuid
    ET.SubElement(domain, "memory", unit="MiB").text = str(spec.memory_mb)
    vcpu = ET.SubElement(domain, "vcpu", placement="static")
    if spec.cpuset:
        vcpu.set("cpuset", format_cpu_spec(spec.cpuset))
    vcpu.text = str(spec.vcpus)
    os_ = ET.SubElement(domain, "os")
    ET.SubElement(os_, "type", arch=spec.arch).text = "hvm"
    # Who made the domain and for which flavor, for an operator reading virsh.
    metadata = ET.SubElement(domain, "metadata")
    ET.SubElement(metadata, f"{{{METADATA_NS}}}instance", flavor=spec.flavor_name)
    ET.register_namespace("rtf", METADATA_NS)
    return ET.tostring(domain, encoding="unicode")
