"""Run OpenStack Placement's own gabbi files against rtframework's API.

The YAML files are read from the installed ``openstack-placement``
package (nothing of them is copied here) and run in-process against
``rtframework.api`` with the fixtures of ``gabbi_fixtures``, a fresh
database per file (``RTF_TEST_DB``: sqlite, postgresql or mysql).

Every test listed in ``gabbi_expected_failures.yaml`` must fail (with
the reason written there); every other test must pass. Prints the
counts; exits non-zero on an unexpected failure or an unexpected pass.

    python -m tests.functional.api.gabbi_run [-k SUBSTRING] [--list-failures]
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import os
import sys
import time
import unittest
import warnings

import yaml
from gabbi import driver

from tests.functional.api import gabbi_fixtures

HERE = os.path.dirname(os.path.abspath(__file__))
EXPECTED_FAILURES = os.path.join(HERE, "gabbi_expected_failures.yaml")
PREFIX = "placement"


def gabbits_dir() -> str:
    spec = importlib.util.find_spec("placement")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("openstack-placement is not installed (pip install "
                         "openstack-placement): its gabbi files are the tests")
    return os.path.join(spec.submodule_search_locations[0], "tests", "functional", "gabbits")


def expected_failures() -> dict[str, str]:
    with open(EXPECTED_FAILURES) as f:
        return yaml.safe_load(f) or {}


def short_id(test: unittest.TestCase) -> str:
    """``file_test_name`` as gabbi names it, without the loader prefix."""
    return test.id().removeprefix(f"{PREFIX}.").removesuffix(".test_request")


def iter_tests(suite):
    for item in suite:
        if isinstance(item, unittest.TestSuite):
            yield from iter_tests(item)
        else:
            yield item


class _Result(unittest.TestResult):
    def __init__(self) -> None:
        super().__init__()
        self.passed: list[str] = []
        self.failed: dict[str, str] = {}

    def addSuccess(self, test):  # noqa: N802 - unittest's name
        self.passed.append(short_id(test))

    def addFailure(self, test, err):  # noqa: N802
        self.failed[short_id(test)] = self._exc_info_to_string(err, test)

    def addError(self, test, err):  # noqa: N802
        self.failed[short_id(test)] = self._exc_info_to_string(err, test)

    def addSkip(self, test, reason):  # noqa: N802
        self.failed[short_id(test)] = f"skipped: {reason}"


def build(substring: str | None = None) -> unittest.TestSuite:
    loader = unittest.TestLoader()
    suite = driver.build_tests(gabbits_dir(), loader, host=None, test_loader_name=PREFIX,
                               intercept=gabbi_fixtures.setup_app,
                               fixture_module=gabbi_fixtures)
    if substring:
        kept = unittest.TestSuite()
        for file_suite in suite:
            if any(substring in t.id() for t in iter_tests(file_suite)):
                kept.addTest(file_suite)
        return kept
    return suite


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", help="only the YAML files whose tests' ids contain this")
    parser.add_argument("--list-failures", action="store_true",
                        help="print every failing test with its error")
    parser.add_argument("--write-expected", action="store_true",
                        help="rewrite the expected-failure list: add every unexpected "
                             "failure (reason: to be written), drop every unexpected pass")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    # The backend's warnings (an inventory shrunk below usage, ...) are
    # what some tests do on purpose; failures are reported below.
    logging.disable(logging.WARNING)
    start = time.monotonic()
    suite = build(args.k)
    result = _Result()
    suite.run(result)
    elapsed = time.monotonic() - start
    expected = expected_failures()
    unexpected_failures = sorted(set(result.failed) - set(expected))
    unexpected_passes = sorted(set(result.passed) & set(expected))
    if args.list_failures:
        for name in sorted(result.failed):
            print(f"== {name}\n{result.failed[name][-1500:]}")
    for name in unexpected_failures:
        print(f"UNEXPECTED FAILURE {name}\n{result.failed[name][-1500:]}")
    for name in unexpected_passes:
        print(f"UNEXPECTED PASS {name} (listed: {expected[name]})")
    if args.write_expected and (unexpected_failures or unexpected_passes):
        merged = {**expected, **{n: "to be written" for n in unexpected_failures}}
        for name in unexpected_passes:
            del merged[name]
        with open(EXPECTED_FAILURES, "w") as f:
            yaml.safe_dump(dict(sorted(merged.items())), f, width=100, sort_keys=False)
    engine = os.environ.get("RTF_TEST_DB", "sqlite")
    # testsRun counts every test; two YAML files name two tests alike.
    print(f"gabbi on {engine}: {len(result.passed)} of {result.testsRun} Placement tests pass, "
          f"{len(set(result.failed) & set(expected))} expected failures, "
          f"{len(unexpected_failures)} unexpected failures, {len(unexpected_passes)} "
          f"unexpected passes, {elapsed:.0f} s")
    return 1 if unexpected_failures or unexpected_passes else 0


if __name__ == "__main__":
    sys.exit(main())
