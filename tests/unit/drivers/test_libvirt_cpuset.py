"""CPU set specs: what an operator writes in cpu_shared_set/cpu_dedicated_set."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rtframework_drivers.libvirt.cpuset import CPUSet, format_cpu_spec, parse_cpu_spec


@pytest.mark.parametrize(("spec", "cpus"), [
    ("0-3,^2,6", {0, 1, 3, 6}),
    ("5", {5}),
    (" 0 - 1 , 4 ", {0, 1, 4}),
    ("^2,0-3", {0, 1, 3}),  # an exclusion applies wherever it is written
    ("0-7,^2-5", {0, 1, 6, 7}),
    ("1,1,1-2", {1, 2}),
])
def test_parse_cpu_spec(spec, cpus):
    assert parse_cpu_spec(spec) == frozenset(cpus)


@pytest.mark.parametrize(("spec", "problem"), [
    ("", "empty item"),
    ("0,,2", "empty item"),
    ("a-3", "'a-3' in CPU set 'a-3' is not a CPU id or range"),
    ("3-1", "range '3-1' in CPU set '3-1' ends before it starts"),
    ("0-2,^0-2", "names no CPU"),
    ("^1", "names no CPU"),
    ("1-", "not a CPU id or range"),
])
def test_bad_cpu_spec_says_what_is_wrong(spec, problem):
    with pytest.raises(ValueError, match=problem.replace("(", r"\(")):
        parse_cpu_spec(spec)


@given(st.frozensets(st.integers(min_value=0, max_value=512), min_size=1))
def test_format_then_parse_gives_the_same_set(cpus):
    assert parse_cpu_spec(format_cpu_spec(cpus)) == cpus


def test_format_cpu_spec_merges_runs():
    assert format_cpu_spec({7, 0, 1, 2, 5}) == "0-2,5,7"


def test_bad_cpu_set_in_config_fails_at_start_up_naming_option(tmp_path):
    from rtframework import conf as rtconf
    from rtframework.driver import load_driver

    ini = tmp_path / "rtf.conf"
    ini.write_text("[DEFAULT]\ncompute_driver = libvirt\n[libvirt]\ncpu_dedicated_set = 4-2\n")
    conf = rtconf.new_conf()
    conf([], default_config_files=[str(ini)])
    with pytest.raises(rtconf.ConfigError, match=r"\[libvirt\] cpu_dedicated_set .*ends before"):
        load_driver(conf, "h1")


def test_cpu_set_type_reads_ini_values():
    assert CPUSet()("0-1") == frozenset({0, 1})
    assert CPUSet()(frozenset({3})) == frozenset({3})
