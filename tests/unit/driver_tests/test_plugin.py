"""The driver conformance kit: collected only when asked for, and each of
its rules catches the driver that breaks it (and only that rule fails)."""

from __future__ import annotations

import os
import pathlib
import textwrap
import xml.etree.ElementTree as ET

import pytest

from rtframework.driver_tests.plugin import KIT_DIR

pytest_plugins = ["pytester"]

ROOT = pathlib.Path(__file__).resolve().parents[3]

# Variants of the example third-party driver, each breaking one rule.
DRIVERS = textwrap.dedent('''
    import dataclasses
    import json
    import os
    import uuid

    from oslo_config import cfg

    from tests.fixtures.thirdparty.acme_hv import AcmeDriver


    class Conformant(AcmeDriver):
        pass


    class NewUuidEachCall(AcmeDriver):
        def get_node_uuid(self, nodename):
            return str(uuid.uuid4())


    class NewChildEachFill(AcmeDriver):
        def update_provider_tree(self, tree, nodename):
            super().update_provider_tree(tree, nodename)
            tree.new_child(f"{nodename}-dev-{uuid.uuid4().hex[:6]}",
                           tree.find_by_name(nodename).uuid, str(uuid.uuid4()))


    class AppliesTheFrameworkShare(AcmeDriver):
        def update_provider_tree(self, tree, nodename):
            super().update_provider_tree(tree, nodename)
            inventory = tree.find_by_name(nodename).inventory
            inventory["VCPU"] = dataclasses.replace(
                inventory["VCPU"], reserved=self.conf.reserved_host_cpus,
                allocation_ratio=self.conf.initial_cpu_allocation_ratio)


    class ReportsWhatIsFree(AcmeDriver):
        def update_provider_tree(self, tree, nodename):
            super().update_provider_tree(tree, nodename)
            inventory = tree.find_by_name(nodename).inventory
            free = 6 - len(self.list_instances())
            inventory["VCPU"] = dataclasses.replace(inventory["VCPU"], total=free,
                                                    max_unit=free)


    class ForgetsGuests(AcmeDriver):
        def __init__(self, conf, host):
            super().__init__(conf, host)
            self.guests = {}

        def _guests(self):
            return dict(self.guests)

        def _save(self, guests):
            self.guests = guests


    class KeyErrorOnUnknownNode(AcmeDriver):
        def spawn(self, instance):
            self.get_available_nodes().index(instance.node)
            super().spawn(instance)


    class RawOsErrors(AcmeDriver):
        def _guests(self):
            if not os.path.exists(self.conf.acme.guests_file):
                return {}
            return super()._guests()

        def _save(self, guests):
            with open(self.conf.acme.guests_file, "w") as stream:
                json.dump(guests, stream)


    class TrustsItsStateFile(AcmeDriver):
        def _guests(self):
            try:
                with open(self.conf.acme.guests_file) as stream:
                    return json.load(stream)
            except FileNotFoundError:
                return {}


    class UnlistedOption(AcmeDriver):
        @classmethod
        def register_opts(cls, conf):
            super().register_opts(conf)
            conf.register_opt(cfg.IntOpt("acme_speed", default=1))
''')

EXPECTED_FAILURES = {
    "conformant": set(),
    # A root that moves is a tree that moves: the tree rules see it too.
    "new-uuid-each-call": {"test_node_uuids_are_the_same_on_every_call",
                           "test_a_periodic_run_puts_every_node_tree_into_placement",
                           "test_the_next_run_writes_nothing_even_after_a_restart",
                           "test_nodes_and_their_uuids_survive_a_restart",
                           "test_the_tree_is_the_node_root_and_its_descendants",
                           "test_filling_a_filled_tree_again_changes_nothing",
                           "test_trees_are_the_same_after_a_restart",
                           "test_the_framework_options_do_not_change_the_report",
                           "test_running_instances_do_not_change_the_report"},
    "new-child-each-fill": {"test_filling_a_filled_tree_again_changes_nothing",
                            "test_a_periodic_run_puts_every_node_tree_into_placement",
                           "test_the_next_run_writes_nothing_even_after_a_restart",
                            "test_trees_are_the_same_after_a_restart",
                            "test_the_framework_options_do_not_change_the_report",
                           "test_running_instances_do_not_change_the_report"},
    "applies-the-framework-share": {"test_the_framework_options_do_not_change_the_report",
                                    "test_no_overcommit_and_no_host_reservation_are_reported"},
    "reports-what-is-free": {"test_running_instances_do_not_change_the_report"},
    "forgets-guests": {"test_instances_are_the_same_after_a_restart"},
    "key-error-on-unknown-node": {"test_spawning_on_a_node_the_host_lacks_is_a_driver_error"},
    "raw-os-errors": {"test_a_state_path_that_cannot_be_used_fails_as_driver_errors"},
    # A state file it cannot even open is an OSError it lets through too.
    "trusts-its-state-file": {"test_corrupt_state_files_fail_as_driver_errors",
                              "test_a_state_path_that_cannot_be_used_fails_as_driver_errors"},
    "unlisted-option": {"test_options_are_in_groups_of_the_drivers_own",
                        "test_every_option_is_listed_for_the_generator_with_help",
                        "test_every_option_is_in_the_generated_sample"},
}


@pytest.fixture
def drivers(pytester, monkeypatch):
    """The variants installed as a distribution (a dist-info on the path)."""
    site = pytester.mkdir("site")
    (site / "kit_drivers.py").write_text(DRIVERS)
    dist = site / "kit_drivers-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: kit-drivers\nVersion: 1.0\n")
    names = "".join(
        f"{name} = kit_drivers:{''.join(w.capitalize() for w in name.split('-'))}\n"
        for name in EXPECTED_FAILURES)
    (dist / "entry_points.txt").write_text(
        f"[rtframework.drivers]\n{names}"
        "[oslo.config.opts]\nkit-acme = tests.fixtures.thirdparty.acme_hv:list_opts\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), str(ROOT)]))
    return site


def run(pytester, *args) -> dict[str, str]:
    """Run pytest in a new process (as a driver author does); test name ->
    passed, failure, error or skipped."""
    report = pytester.path / "report.xml"
    pytester.runpytest_subprocess(*args, "-p", "no:cacheprovider", f"--junitxml={report}")
    outcomes = {}
    for case in ET.parse(report).iter("testcase"):
        kinds = [child.tag for child in case if child.tag in ("failure", "error", "skipped")]
        outcomes[case.get("name")] = kinds[0] if kinds else "passed"
    return outcomes


@pytest.mark.parametrize("name", sorted(EXPECTED_FAILURES))
def test_each_rule_catches_the_driver_that_breaks_it(pytester, drivers, name):
    outcomes = run(pytester, "--rtf-driver", name)
    assert len(outcomes) >= 20
    failed = {test for test, outcome in outcomes.items() if outcome in ("failure", "error")}
    assert failed == EXPECTED_FAILURES[name]


def test_without_the_option_the_kit_is_not_collected(pytester):
    pytester.makepyfile(test_own="def test_own():\n    pass\n")
    assert run(pytester, str(KIT_DIR)) == {}
    assert run(pytester) == {"test_own": "passed"}


def test_the_option_alone_runs_the_kit_and_with_paths_runs_both(pytester, drivers):
    pytester.makepyfile(test_own="def test_own():\n    pass\n")
    alone = run(pytester, "--rtf-driver", "conformant")
    assert alone and "test_own" not in alone
    both = run(pytester, "--rtf-driver", "conformant", "test_own.py")
    assert both == {**alone, "test_own": "passed"}


def test_an_unknown_driver_fails_naming_the_installed_ones(pytester):
    result = pytester.runpytest_subprocess("--rtf-driver", "no-such-driver",
                                           "-p", "no:cacheprovider", "-k", "distinct_names")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*unknown compute driver 'no-such-driver'; installed: *fake*"])
