"""The move tests' small cloud, shared with the lifecycle tests."""

from tests.functional.moves.conftest import cloud  # noqa: F401
from tests.functional.placement.conftest import backend, sql_backend  # noqa: F401
