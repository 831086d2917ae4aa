"""The domain XML of one instance."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass

from rtframework_drivers.libvirt.cpuset import format_cpu_spec

METADATA_NS = "https://rtframework.invalid/xmlns/libvirt/instance/1"


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
