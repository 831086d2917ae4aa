"""Rules that turn libvirt's answers into inventory and traits."""

from __future__ import annotations

import pathlib

import pytest

from rtframework.driver import DriverError
from rtframework_drivers.libvirt import host

FIXTURES = pathlib.Path(__file__).resolve().parents[2] / "fixtures" / "libvirt"


@pytest.fixture
def kvm_caps():
    return host.parse_capabilities((FIXTURES / "capabilities-x86_64.xml").read_text())


def test_x86_64_capabilities_become_arch_cpu_and_guest_traits(kvm_caps):
    assert kvm_caps.arch == "x86_64"
    assert kvm_caps.domain_types == ("qemu", "kvm")
    assert host.capability_traits(kvm_caps) == {
        "HW_ARCH_X86_64",
        "COMPUTE_ARCH_X86_64", "COMPUTE_ARCH_AARCH64",  # no COMPUTE_ARCH_I686 in os-traits
        "HW_CPU_X86_VMX", "HW_CPU_X86_AVX2", "HW_CPU_X86_SSE42", "HW_CPU_X86_AESNI",
        "HW_CPU_X86_CLMUL", "HW_CPU_X86_FMA3", "HW_CPU_X86_INTEL_MD_CLEAR",
        "HW_CPU_X86_PDPE1GB",
        # 'ds' and 'tsc_adjust' have no os-traits name and are left out
    }


def test_virt_type_prefers_kvm_and_refuses_what_the_host_lacks(kvm_caps):
    assert host.choose_virt_type(kvm_caps, None, "qemu:///system") == "kvm"
    assert host.choose_virt_type(kvm_caps, "qemu", "qemu:///system") == "qemu"
    with pytest.raises(DriverError, match="virt_type 'xen' is not offered by qemu:///system "
                                          "for x86_64 guests; offered: qemu, kvm"):
        host.choose_virt_type(kvm_caps, "xen", "qemu:///system")


def test_feature_traits_only_for_known_arches():
    assert host.feature_trait("x86_64", "avx512f") == "HW_CPU_X86_AVX512F"
    assert host.feature_trait("aarch64", "sve") == "HW_CPU_AARCH64_SVE"
    assert host.feature_trait("ppc64le", "altivec") is None
    assert host.feature_trait("x86_64", "no-such-flag") is None


def test_domain_capabilities_become_storage_bus_and_graphics_traits():
    traits = host.domain_capability_traits((FIXTURES / "domcaps-kvm.xml").read_text())
    assert traits == {
        "COMPUTE_STORAGE_BUS_IDE", "COMPUTE_STORAGE_BUS_SCSI", "COMPUTE_STORAGE_BUS_VIRTIO",
        "COMPUTE_STORAGE_BUS_USB", "COMPUTE_STORAGE_BUS_SATA",
        "COMPUTE_GRAPHICS_MODEL_VGA", "COMPUTE_GRAPHICS_MODEL_CIRRUS",
        "COMPUTE_GRAPHICS_MODEL_VIRTIO", "COMPUTE_GRAPHICS_MODEL_NONE",
        "COMPUTE_GRAPHICS_MODEL_BOCHS",  # ramfb has no trait
    }


def test_unsupported_device_gives_no_traits():
    xml = ("<domainCapabilities><devices><disk supported='no'><enum name='bus'>"
           "<value>virtio</value></enum></disk></devices></domainCapabilities>")
    assert host.domain_capability_traits(xml) == set()


ONLINE = frozenset(range(8))


@pytest.mark.parametrize(("shared", "dedicated", "vcpu", "pcpu"), [
    (None, None, 8, 0),
    ("0-1", None, 2, 0),
    (None, "4-7", 4, 4),        # unset shared set: the rest of the online CPUs
    ("0-3", "4-7", 4, 4),
    ("0", "1-7", 1, 7),
    (None, "0-7", 0, 8),        # all dedicated: no VCPU at all
])
def test_cpu_split(shared, dedicated, vcpu, pcpu):
    from rtframework_drivers.libvirt.cpuset import parse_cpu_spec

    def parse(spec):
        return parse_cpu_spec(spec) if spec else None

    assert host.split_cpus(ONLINE, 8, parse(shared), parse(dedicated), "h") == host.CPUSplit(
        vcpu=vcpu, pcpu=pcpu)


def test_overlapping_sets_are_refused_naming_the_cpus():
    with pytest.raises(DriverError, match="both name CPUs 2-3 on host h"):
        host.split_cpus(ONLINE, 8, frozenset({0, 1, 2, 3}), frozenset({2, 3, 4}), "h")


def test_offline_cpus_in_a_set_are_refused():
    with pytest.raises(DriverError, match=r"cpu_dedicated_set names CPUs 9-10 that are not online "
                                          r"on host h \(online: 0-7\)"):
        host.split_cpus(ONLINE, 8, None, frozenset({6, 9, 10}), "h")


def test_inventories_have_six_fields_and_skip_zero_totals():
    inv = host.inventories([("VCPU", 4), ("PCPU", 0)])
    assert list(inv) == ["VCPU"]
    v = inv["VCPU"]
    assert (v.total, v.reserved, v.min_unit, v.max_unit, v.step_size, v.allocation_ratio) == (
        4, 0, 1, 4, 1, 1.0)


def test_disk_gb_is_whole_gib_of_the_filesystem(monkeypatch, tmp_path):
    class Stats:
        f_blocks = 3 * 262144 + 100  # 3 GiB and a bit, in 4 KiB blocks
        f_frsize = 4096

    monkeypatch.setattr(host.os, "statvfs", lambda path: Stats)
    assert host.disk_gb(str(tmp_path)) == 3


def test_disk_gb_of_a_missing_path_names_it(tmp_path):
    with pytest.raises(DriverError, match=f"instances_path {tmp_path}/nope: No such file"):
        host.disk_gb(str(tmp_path / "nope"))
