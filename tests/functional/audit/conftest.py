"""The compute CLI tests' ``rtf`` runner: a config on the test database, host h1."""

from tests.functional.test_compute_cli import rtf  # noqa: F401
