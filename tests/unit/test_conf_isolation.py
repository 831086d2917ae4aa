"""Two ConfigOpts in one process do not see each other's overrides."""

import pytest

from rtframework import conf as rtconf
from rtframework_drivers.fake.driver import FakeDriver


@pytest.mark.parametrize("group,option,value", [
    ("database", "connection", "sqlite:///elsewhere.sqlite"),
    ("placement_database", "auto_sync", False),
    ("placement", "backend", "http"),
    ("fake_driver", "vcpus", 3),
])
def test_group_override_stays_in_its_conf(group, option, value):
    first, second = rtconf.new_conf(), rtconf.new_conf()
    for c in (first, second):
        c([], default_config_files=[])
        FakeDriver.register_opts(c)
    before = second[group][option]
    first.set_override(option, value, group=group)
    try:
        assert first[group][option] == value
        assert second[group][option] == before
    finally:
        first.clear_override(option, group=group)
