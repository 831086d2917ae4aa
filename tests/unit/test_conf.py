"""Configuration loading fails early and names the bad option."""

import pytest

from rtframework import conf as rtconf


def test_defaults_load_without_a_file():
    conf = rtconf.load([])
    assert conf.placement.backend == "sql"
    assert conf.placement.move_claim_strategy == "migration"
    assert conf.cpu_allocation_ratio is None
    assert conf.initial_cpu_allocation_ratio == 4.0


def test_out_of_range_value_names_option_and_file(tmp_path):
    path = tmp_path / "bad.conf"
    path.write_text("[DEFAULT]\nreserved_host_cpus = -3\n")
    with pytest.raises(rtconf.ConfigError) as err:
        rtconf.load([str(path)])
    message = str(err.value)
    assert "[DEFAULT] reserved_host_cpus" in message
    assert str(path) in message
    assert "greater than or equal to 0" in message


def test_unknown_choice_is_rejected(tmp_path):
    path = tmp_path / "bad.conf"
    path.write_text("[placement]\nmove_claim_strategy = sideways\n")
    with pytest.raises(rtconf.ConfigError, match=r"\[placement\] move_claim_strategy.*sideways"):
        rtconf.load([str(path)])


def test_missing_file_is_a_clear_error(tmp_path):
    missing = tmp_path / "nope.conf"
    with pytest.raises(rtconf.ConfigError, match="configuration file not found"):
        rtconf.load([str(missing)])


def test_driver_name_is_not_limited_to_bundled_drivers(tmp_path):
    path = tmp_path / "third.conf"
    path.write_text("[DEFAULT]\ncompute_driver = acme_hypervisor\n")
    assert rtconf.load([str(path)]).compute_driver == "acme_hypervisor"


def test_the_api_libraries_groups_are_not_unknown_and_their_typos_are(tmp_path):
    from rtframework.conf import unknown

    ini = tmp_path / "api.conf"
    ini.write_text("[oslo_policy]\nenforce_new_defaults = false\n"
                   "[keystone_authtoken]\nauth_type = password\n"
                   "[keystone_authtokn]\nauth_type = password\n")
    conf = rtconf.load([str(ini)])
    found = [str(u) for u in unknown.find(conf)]
    assert len(found) == 1, found
    assert "[keystone_authtokn]" in found[0] and "[keystone_authtoken]" in found[0]
